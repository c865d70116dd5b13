package sale

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"seckill/internal/apitime"
	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/settle"
)

// WaitlistEntry is a buyer's place on a sale's waitlist as the API shows it: units that
// come back are offered, in join order, to the entries waiting (internal/stock's
// waitlist.go).
type WaitlistEntry struct {
	ActivityID int64 `json:"activity_id"`
	buyer.Named
	Variant  string `json:"variant,omitempty"`
	Quantity int    `json:"quantity"`
	// Position is the place among the entries still waiting (1: the next to be offered
	// units); 0 once the entry is not waiting.
	Position int          `json:"position"`
	Status   string       `json:"status"`
	JoinedAt apitime.Time `json:"joined_at"`
	// OrderID is the order of the units offered, once offered.
	OrderID string `json:"order_id,omitempty"`
}

// JoinWaitlist puts a buyer on the waitlist of a sale (of one of its variants, by name)
// for quantity units while it (the variant) is sold out, and returns the entry and
// whether it is new; a buyer on it already gets the entry they have. ticket says
// whether the buyer holds a ticket of the sale's line: a sale with a waiting room takes
// no one else (stock.ErrNotAdmitted). Errors: a *FieldError (quantity, variant),
// ErrNotFound, stock.ErrNotAdmitted, settle.ErrNotSoldOut, stock.ErrEnded,
// stock.ErrLimitExceeded, stock.ErrGroupSale, settle.ErrNoWaitlist, ErrUnavailable.
func (s *Waitlists) JoinWaitlist(ctx context.Context, activityID int64, who buyer.ID, quantity int, variant *string, ticket bool) (WaitlistEntry, bool, error) {
	if quantity < 1 || quantity > MaxPerUserLimit {
		return WaitlistEntry{}, false, &FieldError{"quantity", "must be between 1 and the sale's per-user limit"}
	}
	var v stock.Variant
	if variant != nil {
		var err error
		if v, err = s.variants.Variant(ctx, activityID, *variant); err != nil {
			if fe := (*FieldError)(nil); errors.As(err, &fe) {
				return s.entryOr(ctx, activityID, who, err)
			}
			return WaitlistEntry{}, false, err
		}
	}
	e, created, err := s.settle.JoinWaitlist(ctx, activityID, who, quantity, v, s.now(), ticket)
	switch {
	case errors.Is(err, stock.ErrNoSale):
		return WaitlistEntry{}, false, s.catalog.MissingSale(ctx, activityID)
	case errors.Is(err, stock.ErrNoVariant):
		return s.entryOr(ctx, activityID, who, &FieldError{"variant", "is required in a sale of variants, and must name one of them"})
	case errors.Is(err, stock.ErrQuantityOverLimit): // the body's field, named as it is spelled
		var d *stock.DetailError
		if errors.As(err, &d) {
			return WaitlistEntry{}, false, &FieldError{"quantity", strings.TrimPrefix(d.Detail, "quantity ")}
		}
		return WaitlistEntry{}, false, &FieldError{"quantity", "must be between 1 and the sale's per-user limit"}
	case err != nil:
		return WaitlistEntry{}, false, err
	}
	view, err := s.entryView(ctx, e)
	return view, created, err
}

// entryOr answers a join whose variant the sale refuses (none named in a sale of
// variants, or a name it does not have): a buyer with an entry gets it as it is, whatever
// variant the join named, as any second join does; anyone else gets refused.
func (s *Waitlists) entryOr(ctx context.Context, activityID int64, who buyer.ID, refused error) (WaitlistEntry, bool, error) {
	e, err := s.settle.WaitlistEntry(ctx, activityID, who)
	switch {
	case errors.Is(err, settle.ErrNoEntry):
		return WaitlistEntry{}, false, refused
	case err != nil:
		return WaitlistEntry{}, false, err
	case e.Status == settle.EntryEnded: // a join makes a new entry: its variant counts
		return WaitlistEntry{}, false, refused
	}
	view, err := s.entryView(ctx, e)
	return view, false, err
}

// Waitlist returns a buyer's entry on a sale's waitlist, or ErrNotFound.
func (s *Waitlists) Waitlist(ctx context.Context, activityID int64, who buyer.ID) (WaitlistEntry, error) {
	e, err := s.settle.WaitlistEntry(ctx, activityID, who)
	if errors.Is(err, settle.ErrNoEntry) {
		return WaitlistEntry{}, ErrNotFound
	}
	if err != nil {
		return WaitlistEntry{}, err
	}
	return s.entryView(ctx, e)
}

// LeaveWaitlist takes a buyer off a sale's waitlist (an order offered stays); a buyer
// without an entry is ErrNotFound.
func (s *Waitlists) LeaveWaitlist(ctx context.Context, activityID int64, who buyer.ID) error {
	err := s.settle.LeaveWaitlist(ctx, activityID, who)
	if errors.Is(err, settle.ErrNoEntry) {
		return ErrNotFound
	}
	return err
}

// entryView shows an entry: its variant by name, and ended once its sale has (the
// entries end with the sale).
func (s *Waitlists) entryView(ctx context.Context, e settle.Entry) (WaitlistEntry, error) {
	v := WaitlistEntry{ActivityID: e.ActivityID, Named: e.Buyer.Named(), Quantity: e.Quantity, Position: e.Position,
		Status: e.Status, JoinedAt: apitime.Of(e.JoinedAt), OrderID: e.OrderID}
	if i, ok := e.Variant.Index(); ok {
		vs, err := s.variants.variantsOf(ctx, e.ActivityID)
		if err != nil {
			return WaitlistEntry{}, err
		}
		if i >= len(vs) {
			return WaitlistEntry{}, fmt.Errorf("waitlist entry of sale %d: no variant %d", e.ActivityID, i)
		}
		v.Variant = vs[i].Name
	}
	if v.Status == settle.EntryWaiting {
		sales, err := s.sales.Read(ctx, []int64{e.ActivityID})
		if err != nil {
			return WaitlistEntry{}, err
		}
		if sale, ok := sales[e.ActivityID]; ok && !s.now().Before(sale.EndsAt) {
			v.Status, v.Position = settle.EntryEnded, 0
		}
	}
	return v, nil
}
