package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"seckill/internal/sale"
	"seckill/internal/waitingroom"
)

// Catalog is what the routes of the sales and of their lines need from
// internal/sale: the admin's sales, the public reads, and whether a sale Redis lacks
// exists (MissingSale).
type Catalog interface {
	CreateActivity(ctx context.Context, n sale.NewActivity) (sale.Activity, error)
	ListActivities(ctx context.Context, p sale.Page) ([]sale.Activity, int64, error)
	PublicActivities(ctx context.Context, p sale.Page) ([]sale.Activity, int64, error)
	PublicActivity(ctx context.Context, id int64) (sale.Activity, error)
	PatchActivity(ctx context.Context, id int64, p sale.ActivityPatch) (sale.Activity, error)
	Stats(ctx context.Context, id int64) (sale.Stats, error)
	Ledger(ctx context.Context, id int64) (sale.Ledger, error)
	Rebuild(ctx context.Context, id int64) (sale.Stats, error)
	MissingSale(ctx context.Context, activityID int64) error
}

var _ Catalog = (*sale.Catalog)(nil)

// saleRoutes answer the sales: the admin's create, patch and figures, the public reads
// (shared.go), and each sale's waiting room (waitingroom.go).
type saleRoutes struct {
	svc   Catalog
	mw    *middleware
	rooms Rooms
	// funnels keep the lines of archived sales (nil: their status reads no figures).
	funnels Funnel
	// statuses are the lines' public statuses as last encoded (shared.go).
	statuses answers[waitingroom.Status]
}

type createActivityRequest struct {
	Name             *string `json:"name"`
	ProductName      *string `json:"product_name"`
	PriceCents       *int64  `json:"price_cents"`
	Stock            *int64  `json:"stock"`
	PerUserLimit     *int    `json:"per_user_limit"`
	StartsAt         *string `json:"starts_at"`
	EndsAt           *string `json:"ends_at"`
	PayWindowSeconds *int    `json:"pay_window_seconds"`
	// Group-buy (kind "group") and the cap on participations of any kind.
	Kind                  *string `json:"kind"`
	GroupSize             *int    `json:"group_size"`
	GroupWindowSeconds    *int    `json:"group_window_seconds"`
	PerUserParticipations *int    `json:"per_user_participations"`
	StockBuckets          *int    `json:"stock_buckets"`
	// A sale of variants gives them instead of stock.
	Variants        *[]variantRequest `json:"variants"`
	PerVariantLimit *int              `json:"per_variant_limit"`
	// EarlyAccessSeconds opens the sale early to the holders of its access codes.
	EarlyAccessSeconds *int `json:"early_access_seconds"`
	roomRequest
	shopRequest
}

// shopRequest is the shop's own fields of a sale, on create and PATCH.
type shopRequest struct {
	ExternalRef *string         `json:"external_ref"`
	Metadata    json.RawMessage `json:"metadata"`
}

// fields are the shop's fields as sent; null, as any optional field's, is none.
func (r shopRequest) fields() sale.ShopFields {
	f := sale.ShopFields{ExternalRef: r.ExternalRef, Metadata: r.Metadata}
	if string(f.Metadata) == "null" {
		f.Metadata = nil
	}
	return f
}

type variantRequest struct {
	Name        *string `json:"name"`
	Stock       *int64  `json:"stock"`
	ExternalRef *string `json:"external_ref"`
}

// variants reads the variants of a create body (nil when it has none).
func (r createActivityRequest) variants() ([]sale.NewVariant, error) {
	if r.Variants == nil {
		return nil, nil
	}
	if r.Stock != nil {
		return nil, &sale.FieldError{Field: "stock", Message: "must not be given beside variants: the sale's stock is the sum of theirs"}
	}
	out := make([]sale.NewVariant, 0, len(*r.Variants))
	for i, v := range *r.Variants {
		switch {
		case v.Name == nil:
			return nil, required(fmt.Sprintf("variants[%d].name", i))
		case v.Stock == nil:
			return nil, required(fmt.Sprintf("variants[%d].stock", i))
		}
		out = append(out, sale.NewVariant{Name: *v.Name, Stock: *v.Stock, ExternalRef: v.ExternalRef})
	}
	return out, nil
}

func (r createActivityRequest) toNew() (sale.NewActivity, error) {
	var n sale.NewActivity
	switch {
	case r.Name == nil:
		return n, required("name")
	case r.ProductName == nil:
		return n, required("product_name")
	case r.PriceCents == nil:
		return n, required("price_cents")
	case r.Stock == nil && r.Variants == nil:
		return n, required("stock")
	case r.PerUserLimit == nil:
		return n, required("per_user_limit")
	case r.StartsAt == nil:
		return n, required("starts_at")
	case r.EndsAt == nil:
		return n, required("ends_at")
	}
	starts, err := timeField("starts_at", r.StartsAt)
	if err != nil {
		return n, err
	}
	ends, err := timeField("ends_at", r.EndsAt)
	if err != nil {
		return n, err
	}
	variants, err := r.variants()
	if err != nil {
		return n, err
	}
	n = sale.NewActivity{Name: *r.Name, ProductName: *r.ProductName, PriceCents: *r.PriceCents,
		PerUserLimit: *r.PerUserLimit, StartsAt: *starts, EndsAt: *ends,
		GroupSize: r.GroupSize, GroupWindowSeconds: r.GroupWindowSeconds, PerUserParticipations: r.PerUserParticipations,
		Room: r.patch(), Shop: r.fields(), Variants: variants, PerVariantLimit: r.PerVariantLimit}
	if r.Stock != nil {
		n.Stock = *r.Stock
	}
	if r.EarlyAccessSeconds != nil {
		n.EarlyAccessSeconds = *r.EarlyAccessSeconds
	}
	if r.Kind != nil {
		if *r.Kind == "" {
			return n, &sale.FieldError{Field: "kind", Message: `must be "sale" or "group"`}
		}
		n.Kind = *r.Kind
	}
	if r.StockBuckets != nil {
		if *r.StockBuckets == 0 {
			return n, &sale.FieldError{Field: "stock_buckets", Message: "must be between 1 and 64"}
		}
		n.StockBuckets = *r.StockBuckets
	}
	if r.PayWindowSeconds != nil {
		if *r.PayWindowSeconds == 0 {
			return n, &sale.FieldError{Field: "pay_window_seconds", Message: "must be between 10 and 86400"}
		}
		n.PayWindowSeconds = *r.PayWindowSeconds
	}
	return n, n.Validate()
}

func (sr *saleRoutes) createActivity(c *gin.Context) {
	var req createActivityRequest
	if err := sr.mw.decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	n, err := req.toNew()
	if err != nil {
		respondError(c, err)
		return
	}
	a, err := sr.svc.CreateActivity(c.Request.Context(), n)
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, a)
}

// listActivities answers a page of sales, newest first, from list with answer: the
// public one (a snapshot at most a second old, answered for a shared cache) or the
// admin's (MySQL at the moment).
func listActivities(list func(context.Context, sale.Page) ([]sale.Activity, int64, error), answer func(*gin.Context, any)) gin.HandlerFunc {
	return func(c *gin.Context) {
		p, err := page(c)
		if err != nil {
			respondError(c, err)
			return
		}
		as, next, err := list(c.Request.Context(), p)
		if err != nil {
			respondError(c, err)
			return
		}
		var cursor *string // null on the last page
		if next > 0 {
			s := strconv.FormatInt(next, 10)
			cursor = &s
		}
		answer(c, gin.H{"activities": as, "next": cursor})
	}
}

// page reads ?after= (the next of the page before: an activity id) and ?limit= (1 to
// sale.MaxPage, sale.DefaultPage when not given).
func page(c *gin.Context) (sale.Page, error) {
	p := sale.Page{Limit: sale.DefaultPage}
	if q, given := c.GetQuery("after"); given {
		var ok bool
		if p.After, ok = sale.ParseID(q); !ok {
			return p, &invalidRequest{"after must be the next of the page before (an activity id)"}
		}
	}
	if q, given := c.GetQuery("limit"); given {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > sale.MaxPage || strconv.Itoa(n) != q {
			return p, &invalidRequest{"limit must be an integer from 1 to " + strconv.Itoa(sale.MaxPage)}
		}
		p.Limit = n
	}
	return p, nil
}

type patchActivityRequest struct {
	PerUserLimit *int    `json:"per_user_limit"`
	EndsAt       *string `json:"ends_at"`
	// AddStock is a number of units, or for a sale of variants an object of units by
	// variant name.
	AddStock           json.RawMessage `json:"add_stock"`
	EarlyAccessSeconds *int            `json:"early_access_seconds"`
	roomRequest
	shopRequest
}

// addStock reads add_stock: a number, or an object of numbers by variant name (nil,
// nil when absent).
func (r patchActivityRequest) addStock() (*int64, map[string]int64, error) {
	raw := bytes.TrimSpace(r.AddStock)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil, nil
	}
	bad := &invalidRequest{`add_stock must be an integer in range, or an object of integers by variant name such as {"EU 42": 5}`}
	if raw[0] == '{' {
		var byVariant map[string]int64
		if json.Unmarshal(raw, &byVariant) != nil {
			return nil, nil, bad
		}
		if byVariant == nil {
			byVariant = map[string]int64{}
		}
		return nil, byVariant, nil
	}
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return nil, nil, bad
	}
	return &n, nil, nil
}

func (sr *saleRoutes) patchActivity(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	var req patchActivityRequest
	if err := sr.mw.decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	ends, err := timeField("ends_at", req.EndsAt)
	if err != nil {
		respondError(c, err)
		return
	}
	add, addVariants, err := req.addStock()
	if err != nil {
		respondError(c, err)
		return
	}
	room, shop := req.patch(), req.fields()
	if req.PerUserLimit == nil && ends == nil && add == nil && addVariants == nil && room.Empty() && shop.ExternalRef == nil &&
		shop.Metadata == nil && req.EarlyAccessSeconds == nil {
		respondError(c, &invalidRequest{"give at least one of per_user_limit, ends_at, add_stock, the waiting room's settings, " +
			"early_access_seconds, external_ref and metadata"})
		return
	}
	a, err := sr.svc.PatchActivity(c.Request.Context(), id,
		sale.ActivityPatch{PerUserLimit: req.PerUserLimit, EndsAt: ends, AddStock: add, AddVariants: addVariants, Room: room, Shop: shop,
			EarlyAccessSeconds: req.EarlyAccessSeconds})
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, a)
}

// byActivity answers 200 with what get returns for the activity in the path.
func byActivity[T any](get func(context.Context, int64) (T, error)) gin.HandlerFunc {
	return activityRoute(get, func(c *gin.Context, v any) { c.JSON(http.StatusOK, v) }, respondError)
}

// activityRoute answers what get returns for the activity in the path with answer, or
// its error with fail.
func activityRoute[T any](get func(context.Context, int64) (T, error), answer func(*gin.Context, any),
	fail func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := pathID(c, "id")
		if !ok {
			fail(c, errBadPathActivity)
			return
		}
		v, err := get(c.Request.Context(), id)
		if err != nil {
			fail(c, err)
			return
		}
		answer(c, v)
	}
}
