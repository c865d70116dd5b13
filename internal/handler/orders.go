package handler

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"seckill/internal/auth"
	"seckill/internal/sale"
)

// Purchases is what the purchase route needs from internal/sale.
type Purchases interface {
	Buy(ctx context.Context, r sale.BuyRequest) (sale.Order, bool, error)
}

// Groups is what the routes of a group-buy's groups need from internal/sale.
type Groups interface {
	Seat(ctx context.Context, r sale.BuyRequest) (sale.Group, sale.Order, bool, error)
	GetGroup(ctx context.Context, id string) (sale.Group, error)
	OpenGroups(ctx context.Context, activityID int64, limit int) ([]sale.Group, error)
	AllGroups(ctx context.Context, activityID int64, limit int) ([]sale.Group, error)
}

// Orders is what the routes of orders after their purchase need from internal/sale.
type Orders interface {
	GetOrder(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	ListOrders(ctx context.Context, c sale.Caller) ([]sale.Order, error)
	SaleOrders(ctx context.Context, c sale.Caller, p sale.OrderPage) ([]sale.Order, error)
	Pay(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	Cancel(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	Refund(ctx context.Context, id string, c sale.Caller, restock bool) (sale.Order, error)
}

var (
	_ Purchases = (*sale.Purchases)(nil)
	_ Groups    = (*sale.Groups)(nil)
	_ Orders    = (*sale.Orders)(nil)
)

// purchaseRoutes answer purchases (buy), and read the sale pass a purchase of a
// waiting-room sale carries (admission, waitingroom.go).
type purchaseRoutes struct {
	svc    Purchases
	mw     *middleware
	passes *auth.Passes
}

// groupRoutes answer a group-buy's seats (seat: a purchase too) and its groups.
type groupRoutes struct {
	svc Groups
	mw  *middleware
}

// orderRoutes answer the orders after their purchase: the lists, the payment, the
// cancel and the shop's refund.
type orderRoutes struct {
	svc     Orders
	mw      *middleware
	cursors *auth.Cursors // of a sale's pages of orders
}

type buyRequest struct {
	Quantity *int    `json:"quantity"`
	Variant  *string `json:"variant"`
}

func validIdempotencyKey(k string) bool {
	if len(k) < 1 || len(k) > 64 {
		return false
	}
	for _, r := range k {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

// purchase reads what every purchase and seat carries, the body's quantity, the
// variant it names (none when absent) and the optional Idempotency-Key header, into a
// purchase by the caller.
func purchase(c *gin.Context, body []byte) (sale.BuyRequest, error) {
	var r sale.BuyRequest
	r.Buyer = caller(c).Buyer
	keys, hasKey := c.Request.Header["Idempotency-Key"]
	if hasKey && (len(keys) != 1 || !validIdempotencyKey(keys[0])) {
		return r, errInvalidIdemKey
	}
	if hasKey {
		r.IdempotencyKey = keys[0]
	}
	if _, hasCode := c.Request.Header[accessCodeHeader]; hasCode {
		code, err := presentedCode(c)
		if err != nil {
			return r, err
		}
		r.AccessCode = code
	}
	if q, ok := plainQuantity(body); ok {
		r.Quantity = q
		return r, nil
	}
	var req buyRequest
	if err := decodeBody(body, &req); err != nil {
		return r, err
	}
	if req.Quantity == nil {
		return r, required("quantity")
	}
	r.Quantity, r.VariantName = *req.Quantity, req.Variant
	return r, nil
}

// plainQuantity reads the body nearly every purchase sends, {"quantity":N} with N an
// integer of at most nine digits and nothing else, not even a space, without
// encoding/json (json.Unmarshal was a fifth of a sold-out answer's handlers); ok is
// false for any other body, which decodeBody reads. What it reads, json.Unmarshal
// reads the same (FuzzBuyBody).
func plainQuantity(body []byte) (int, bool) {
	digits, ok := bytes.CutPrefix(body, []byte(`{"quantity":`))
	if !ok {
		return 0, false
	}
	if digits, ok = bytes.CutSuffix(digits, []byte("}")); !ok {
		return 0, false
	}
	negative := len(digits) > 0 && digits[0] == '-'
	if negative {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 9 || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	n := 0
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = 10*n + int(d-'0')
	}
	if negative {
		n = -n
	}
	return n, true
}

// accepted answers a purchase: 202 for a new one, 200 for a replay of its key.
func accepted(c *gin.Context, replayed bool, body any) {
	if replayed {
		c.JSON(http.StatusOK, body)
		return
	}
	c.JSON(http.StatusAccepted, body)
}

// acceptedOrder is accepted for an order, written by sale.Order.AppendJSON rather than
// through reflection (the same bytes): every accepted purchase answers one.
func acceptedOrder(c *gin.Context, replayed bool, o *sale.Order) {
	body, err := o.AppendJSON(make([]byte, 0, 384))
	if err != nil {
		accepted(c, replayed, o) // as before: json.Marshal's error too
		return
	}
	status := http.StatusAccepted
	if replayed {
		status = http.StatusOK
	}
	c.Data(status, "application/json; charset=utf-8", body)
}

func (pr *purchaseRoutes) buy(c *gin.Context, body []byte) {
	id, ok := pathID(c, "id")
	if !ok {
		pr.mw.purchaseError(c, errBadPathActivity, nil)
		return
	}
	r, err := purchase(c, body)
	if err != nil {
		pr.mw.purchaseError(c, err, nil)
		return
	}
	r.ActivityID = id
	refused := pr.admission(c, &r)
	o, replayed, err := pr.svc.Buy(c.Request.Context(), r)
	if err != nil {
		pr.mw.purchaseError(c, err, refused)
		return
	}
	acceptedOrder(c, replayed, &o)
}

// seat opens a group (the path names a sale) or joins one (the path names a group).
func (gr *groupRoutes) seat(open bool) func(*gin.Context, []byte) {
	return func(c *gin.Context, body []byte) {
		var id int64
		if open {
			var ok bool
			if id, ok = pathID(c, "id"); !ok {
				gr.mw.purchaseError(c, errBadPathActivity, nil)
				return
			}
		}
		r, err := purchase(c, body)
		if err != nil {
			gr.mw.purchaseError(c, err, nil)
			return
		}
		r.ActivityID, r.OpenGroup, r.Group = id, open, c.Param("gid")
		g, o, replayed, err := gr.svc.Seat(c.Request.Context(), r)
		if err != nil {
			gr.mw.purchaseError(c, err, nil)
			return
		}
		accepted(c, replayed, gin.H{"group": g, "order": o})
	}
}

func (gr *groupRoutes) getGroup(c *gin.Context) {
	g, err := gr.svc.GetGroup(c.Request.Context(), c.Param("gid"))
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, g)
}

// listGroups lists a group-buy sale's open groups, fullest first; admins see every
// group and its members, from MySQL, newest first. ?limit= bounds the list.
func (gr *groupRoutes) listGroups(admin bool) gin.HandlerFunc {
	list, def := gr.svc.OpenGroups, defaultListedGroups
	if admin {
		list, def = gr.svc.AllGroups, maxListedGroups
	}
	return func(c *gin.Context) {
		id, ok := pathID(c, "id")
		if !ok {
			respondError(c, errBadPathActivity)
			return
		}
		limit := def
		if q, given := c.GetQuery("limit"); given {
			n, err := strconv.Atoi(q)
			if err != nil || n < 1 || n > maxListedGroups {
				respondError(c, errBadGroupLimit)
				return
			}
			limit = n
		}
		gs, err := list(c.Request.Context(), id, limit)
		if err != nil {
			respondError(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"groups": gs})
	}
}

// The lists of groups: a buyer is shown the fullest defaultListedGroups open ones
// unless ?limit= asks for another number, up to maxListedGroups.
const (
	defaultListedGroups = 50
	maxListedGroups     = 500
)

// listOrders lists the caller's own orders, or with ?activity_id= a page of a sale's
// orders (listSaleOrders).
func (or *orderRoutes) listOrders(c *gin.Context) {
	q := c.Request.URL.Query()
	if q.Has("activity_id") {
		or.listSaleOrders(c, q)
		return
	}
	if q.Has("status") || q.Has("after") || q.Has("limit") || caller(c).Service {
		respondError(c, errNoActivityID)
		return
	}
	os, err := or.svc.ListOrders(c.Request.Context(), caller(c))
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"orders": os})
}

// listSaleOrders answers a page of a sale's orders: every buyer's to the shop's back end
// and admins, the caller's own to a buyer. Its next is a cursor of the listing (the
// sale, the status, whose orders), signed, holding the last order's id; a page that is
// empty has none.
func (or *orderRoutes) listSaleOrders(c *gin.Context, q url.Values) {
	id, err := strconv.ParseInt(q.Get("activity_id"), 10, 64)
	if err != nil || id < 1 {
		respondError(c, errBadActivityID)
		return
	}
	p := sale.OrderPage{ActivityID: id, Status: q.Get("status"), Limit: sale.DefaultOrderPage}
	if q.Has("limit") {
		if p.Limit, err = strconv.Atoi(q.Get("limit")); err != nil {
			p.Limit = 0 // not a number: refused with the range, as one out of it
		}
	}
	who := caller(c)
	whose := "*"
	if !who.Admin && !who.Service {
		whose = strconv.Quote(string(who.Buyer)) // quoted: no subject reads as "*"
	}
	scope := fmt.Sprintf("orders of sale %d, status %q, of %s", id, p.Status, whose)
	if q.Has("after") {
		var ok bool
		if p.After, ok = or.cursors.Open(scope, q.Get("after")); !ok {
			respondError(c, errBadCursor)
			return
		}
	}
	os, err := or.svc.SaleOrders(c.Request.Context(), who, p)
	if err != nil {
		respondError(c, err)
		return
	}
	var next *string
	if len(os) > 0 {
		cur := or.cursors.Issue(scope, os[len(os)-1].ID)
		next = &cur
	}
	c.JSON(http.StatusOK, gin.H{"orders": os, "next": next})
}

type refundRequest struct {
	Restock *bool `json:"restock"`
}

// refund records the shop's refund of an order. The body is optional: none (or no
// restock) puts the units back on sale.
func (or *orderRoutes) refund(c *gin.Context) {
	body, err := or.mw.readBody(c)
	if err != nil {
		respondError(c, err)
		return
	}
	req := refundRequest{}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeBody(body, &req); err != nil {
			respondError(c, err)
			return
		}
	}
	restock := req.Restock == nil || *req.Restock
	o, err := or.svc.Refund(c.Request.Context(), c.Param("id"), caller(c), restock)
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, o)
}

// byOrder answers 200 with the order act returns for the order id in the path.
func byOrder(act func(context.Context, string, sale.Caller) (sale.Order, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		o, err := act(c.Request.Context(), c.Param("id"), caller(c))
		if err != nil {
			respondError(c, err)
			return
		}
		c.JSON(http.StatusOK, o)
	}
}
