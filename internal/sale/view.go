package sale

import (
	"context"
	"strconv"
	"strings"

	"seckill/internal/apitime"
	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/store"
)

// Order is an order as the API shows it: the order object of api/openapi.yaml. The
// events of internal/store carry the same object (EventViews).
type Order struct {
	ID         string `json:"id"`
	ActivityID int64  `json:"activity_id"`
	// Named is the order's buyer: "buyer", and "user_id" for a decimal buyer.
	buyer.Named
	Quantity    int           `json:"quantity"`
	AmountCents int64         `json:"amount_cents"`
	Status      string        `json:"status"`
	CreatedAt   apitime.Time  `json:"created_at"`
	ExpiresAt   apitime.Time  `json:"expires_at"`
	PaidAt      *apitime.Time `json:"paid_at,omitempty"`
	// PaidBy is who confirmed the payment: store.PaidByService, PaidByAdmin or
	// PaidByBuyer.
	PaidBy        string `json:"paid_by,omitempty"`
	FailureReason string `json:"failure_reason,omitempty"`
	// GroupID is the order's group in a group-buy sale.
	GroupID string `json:"group_id,omitempty"`
	// CheckoutURL is where the buyer pays a created order (Checkout), when the shop has
	// one.
	CheckoutURL string `json:"checkout_url,omitempty"`
	// RefundedAt and Restock are set on a refunded order: when, and whether its units
	// went back on sale.
	RefundedAt *apitime.Time `json:"refunded_at,omitempty"`
	Restock    *bool         `json:"restock,omitempty"`
	// Variant is the variant bought in a sale of variants.
	Variant string `json:"variant,omitempty"`
	// Offered is true for units the waitlist offered the buyer (returns to whoever
	// asked first), not a purchase.
	Offered bool `json:"offered,omitempty"`
	// EarlyAccess is true for an order bought in the sale's early window, with an
	// access code.
	EarlyAccess bool `json:"early_access,omitempty"`
}

// Checkout is a shop's checkout page as a URL template (SECKILL_CHECKOUT_URL, checked
// by internal/config): {order_id} and {activity_id} stand for the order's. "" is none.
type Checkout string

// show sets the checkout URL of v when v is created and the shop has a checkout.
func (c Checkout) show(v *Order) {
	if c == "" || v.Status != store.StatusCreated {
		return
	}
	v.CheckoutURL = strings.NewReplacer("{order_id}", v.ID, "{activity_id}", strconv.FormatInt(v.ActivityID, 10)).
		Replace(string(c))
}

// EventViews are the objects the events of internal/store carry (store.New takes
// them): an order as the API shows it, with the shop's Checkout, and a group as the
// API shows it to a buyer (without its members).
type EventViews struct {
	Checkout Checkout
}

// Order is o as the API shows it.
func (e EventViews) Order(o store.Order) any {
	v := storedView(o)
	e.Checkout.show(&v)
	return v
}

// Group is g as the API shows it to a buyer.
func (EventViews) Group(g store.Group) any {
	v := storedGroupView(g)
	v.MemberIDs, v.MemberBuyers = nil, nil
	return v
}

// storedView shows an order MySQL holds.
func storedView(o store.Order) Order {
	v := Order{ID: o.ID, ActivityID: o.ActivityID, Named: o.Buyer.Named(), Quantity: o.Quantity, AmountCents: o.AmountCents,
		Status: o.Status, CreatedAt: apitime.Of(o.CreatedAt), ExpiresAt: apitime.Of(o.ExpiresAt), PaidAt: apitime.OfPtr(o.PaidAt)}
	if o.FailureReason != nil {
		v.FailureReason = *o.FailureReason
	}
	if o.GroupID != nil {
		v.GroupID = *o.GroupID
	}
	if o.PaidBy != nil {
		v.PaidBy = *o.PaidBy
	}
	if o.Status == store.StatusRefunded {
		v.RefundedAt, v.Restock = apitime.OfPtr(o.RefundedAt), o.Restock
	}
	v.Offered, v.EarlyAccess = o.Offered, o.EarlyAccess
	if o.Variant != nil {
		v.Variant = *o.Variant
	}
	return v
}

// queuedView shows an order on its way to MySQL (priced: stock.QueuedOrder.Priced) as
// the row it will be, its variant named from the sale's (variants, by index).
func queuedView(q stock.QueuedOrder, variants []store.Variant) Order {
	row := store.RowOf(q).Order
	row.Status = store.StatusQueued
	v := storedView(row)
	if i, ok := q.Variant.Index(); ok && i < len(variants) {
		v.Variant = variants[i].Name
	}
	return v
}

// inForce shows, in the views of orders whose window may still run, the deadline in
// force: for a created order, its pay window as set extended by the time MySQL outages
// took from it (and the shop's checkout URL); for a seat waiting in its group (grouping,
// or queued in a group still open), the end in force of the group's window; for any
// other queued order, whose pay window starts only once MySQL has it, the earliest it
// can end: a whole window from now. stored has, by id, the rows of the stored orders
// among them (their windows as set). The outages are read only when an order needs
// them.
func (s *Orders) inForce(ctx context.Context, views []Order, stored map[string]store.Order) error {
	var w store.Windows
	for i := range views {
		v := &views[i]
		switch v.Status {
		case store.StatusQueued:
			if v.GroupID != "" {
				if end := s.groupBuys.groupEnd(ctx, v.ActivityID, v.GroupID); !end.IsZero() {
					v.ExpiresAt = apitime.Of(end)
					continue
				}
			}
			if earliest := s.now().Add(v.ExpiresAt.Sub(v.CreatedAt.Time)); earliest.After(v.ExpiresAt.Time) {
				v.ExpiresAt = apitime.Of(earliest)
			}
		case store.StatusGrouping:
			if end := s.groupBuys.groupEnd(ctx, v.ActivityID, v.GroupID); end.After(v.ExpiresAt.Time) {
				v.ExpiresAt = apitime.Of(end)
			}
		case store.StatusCreated:
			s.Checkout.show(v)
			if w == nil {
				out, err := s.outages.Read(ctx)
				if err != nil {
					return err
				}
				w = out
			}
			if row, ok := stored[v.ID]; ok {
				v.ExpiresAt = apitime.Of(row.Deadline(w, s.now()))
			}
		}
	}
	return nil
}
