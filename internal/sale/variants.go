package sale

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"seckill/internal/stock"
	"seckill/internal/store"
)

// Variants finds the variants of a sale that a purchase or a waitlist names, and keeps,
// in this process, those of the sales it met (none for a sale without): a sale's
// variants, their names and their indexes never change once it is created, so a
// purchase finds its variant's index without a storage call after the sale's first.
type Variants struct {
	*base
	known sync.Map // activity id -> []store.Variant
}

// variantsOf returns a sale's variants by index, read from MySQL the first time.
func (s *Variants) variantsOf(ctx context.Context, activityID int64) ([]store.Variant, error) {
	if vs, ok := s.known.Load(activityID); ok {
		return vs.([]store.Variant), nil
	}
	// A sale neither the public list's snapshot (listed) nor Redis knows is no sale: a
	// crowd naming variants of made-up sales does not reach MySQL. Redis knows a sale
	// made since the snapshot was read.
	switch known, err := s.catalog.listed(ctx, activityID); {
	case err != nil:
		return nil, err
	case known == nil:
		switch inRedis, err := s.stock.HasSale(ctx, activityID); {
		case err != nil:
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		case !inRedis:
			return nil, ErrNotFound
		}
	}
	a, err := s.store.Activities.GetActivity(ctx, activityID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	s.known.Store(activityID, a.Variants)
	return a.Variants, nil
}

// Variant is the variant of a sale a purchase names: a *FieldError naming variant when
// the sale has no variant of that name (or no variants at all), ErrNotFound for no such
// sale.
func (s *Variants) Variant(ctx context.Context, activityID int64, name string) (stock.Variant, error) {
	vs, err := s.variantsOf(ctx, activityID)
	if err != nil {
		return 0, err
	}
	if len(vs) == 0 {
		return 0, &FieldError{"variant", "must not be given: the sale has no variants"}
	}
	i := slices.IndexFunc(vs, func(v store.Variant) bool { return v.Name == name })
	if i < 0 {
		return 0, &FieldError{"variant", fmt.Sprintf("%q is no variant of the sale", name)}
	}
	return stock.VariantAt(vs[i].Idx), nil
}

// namesOf returns the variants a queued order's view names its variant from: its sale's,
// or none for an order without a variant.
func (s *Variants) namesOf(ctx context.Context, q stock.QueuedOrder) ([]store.Variant, error) {
	if _, ok := q.Variant.Index(); !ok {
		return nil, nil
	}
	return s.variantsOf(ctx, q.ActivityID)
}

// variantSoldOut is a sold-out refusal of a purchase of one variant, with the variant's
// name: a variant sells out while the others still sell, so "the sale is sold out" would
// mislead. It unwraps to the refusal it names (stock.ErrSoldOut; the sold-out flag's
// answer, which reserve.AnsweredInProcess tells).
type variantSoldOut struct {
	name string
	err  error
}

func (e *variantSoldOut) Error() string { return "the variant " + e.name + " is sold out" }
func (e *variantSoldOut) Unwrap() error { return e.err }

// namedSoldOut names the variant of purchase r in err when err is a sold-out refusal of
// it ("The variant EU 42 is sold out: only 1 left."); any other err is returned as it is.
func (s *Variants) namedSoldOut(ctx context.Context, r BuyRequest, err error) error {
	i, ok := r.Variant.Index()
	if !ok || !errors.Is(err, stock.ErrSoldOut) {
		return err
	}
	vs, verr := s.variantsOf(ctx, r.ActivityID) // known: the purchase found its variant by name
	if verr != nil || i >= len(vs) {
		return err
	}
	detail := "no units are left"
	var d *stock.DetailError
	if errors.As(err, &d) {
		detail = d.Detail
	}
	return &stock.DetailError{Err: &variantSoldOut{name: vs[i].Name, err: err}, Detail: detail}
}
