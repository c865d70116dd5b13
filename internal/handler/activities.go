package handler

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"seckill/internal/sale"
)

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

func (r createActivityRequest) toNew() (sale.NewActivity, error) {
	var n sale.NewActivity
	switch {
	case r.Name == nil:
		return n, required("name")
	case r.ProductName == nil:
		return n, required("product_name")
	case r.PriceCents == nil:
		return n, required("price_cents")
	case r.Stock == nil:
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
	n = sale.NewActivity{Name: *r.Name, ProductName: *r.ProductName, PriceCents: *r.PriceCents,
		Stock: *r.Stock, PerUserLimit: *r.PerUserLimit, StartsAt: *starts, EndsAt: *ends,
		GroupSize: r.GroupSize, GroupWindowSeconds: r.GroupWindowSeconds, PerUserParticipations: r.PerUserParticipations,
		Room: r.patch(), Shop: r.fields()}
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

func (h *Handler) createActivity(c *gin.Context) {
	var req createActivityRequest
	if err := h.decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	n, err := req.toNew()
	if err != nil {
		respondError(c, err)
		return
	}
	a, err := h.svc.CreateActivity(c.Request.Context(), n)
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, a)
}

// listActivities answers a page of sales, newest first, from list: the public one (a
// snapshot at most a second old) or the admin's (MySQL at the moment).
func listActivities(list func(context.Context, sale.Page) ([]sale.Activity, int64, error)) gin.HandlerFunc {
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
		c.JSON(http.StatusOK, gin.H{"activities": as, "next": cursor})
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
	AddStock     *int64  `json:"add_stock"`
	roomRequest
	shopRequest
}

func (h *Handler) patchActivity(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	var req patchActivityRequest
	if err := h.decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	ends, err := timeField("ends_at", req.EndsAt)
	if err != nil {
		respondError(c, err)
		return
	}
	room, shop := req.patch(), req.fields()
	if req.PerUserLimit == nil && ends == nil && req.AddStock == nil && room.Empty() && shop.ExternalRef == nil && shop.Metadata == nil {
		respondError(c, &invalidRequest{"give at least one of per_user_limit, ends_at, add_stock, the waiting room's settings, " +
			"external_ref and metadata"})
		return
	}
	a, err := h.svc.PatchActivity(c.Request.Context(), id,
		sale.ActivityPatch{PerUserLimit: req.PerUserLimit, EndsAt: ends, AddStock: req.AddStock, Room: room, Shop: shop})
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, a)
}

// byActivity answers 200 with what get returns for the activity in the path.
func byActivity[T any](get func(context.Context, int64) (T, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := pathID(c, "id")
		if !ok {
			respondError(c, errBadPathActivity)
			return
		}
		v, err := get(c.Request.Context(), id)
		if err != nil {
			respondError(c, err)
			return
		}
		c.JSON(http.StatusOK, v)
	}
}
