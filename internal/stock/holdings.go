package stock

import (
	"fmt"
	"strconv"

	"seckill/internal/buyer"
)

// What a buyer holds in a sale, and the per-user rule over it, are read and changed
// here only: in Lua by the scripts (holdings.lua, user_limit.lua), in Go by the rebuild's
// staging and the snapshot (HoldingFields, ParseHoldings). A sale's users hash keeps it
// in two fields per buyer (buyerfields.go): the units, and, in a sale that counts them
// (Counted: a cap on participations, or a group-buy sale), the orders
// (participations). MySQL keeps the same in user_purchases (internal/store's
// holdings.go).
// QuantityOverLimit is quantity_refused in Go: the sold-out flag answers only a
// purchase the script would not refuse for its quantity alone.
func QuantityOverLimit(quantity, limit int) bool { return quantity > limit }

// Holds is what an order of quantity units adds to what its buyer holds (hold in
// holdings.lua): the ledger counts a queued order's share of its buyer's holding by it.
func Holds(quantity int) int64 { return int64(quantity) }

// HoldingFields calls add with each field of the users hash, and its value, that makes
// the buyers' holdings: units each buyer holds, and orders (parts) where the sale counts
// them. The rebuild stages the users hash by it.
func HoldingFields(units, parts map[buyer.ID]int64, Counted bool, add func(field string, n int64)) {
	for who, n := range units {
		if n > 0 {
			add(UnitsField(who), n)
		}
	}
	for who, n := range parts {
		if n > 0 && Counted {
			add(PartsField(who), n)
		}
	}
}

// VariantHoldingFields calls add with each field of the users hash, and its value, of the
// units of each variant each buyer holds (variants: by buyer, by index), kept where the
// sale sets a per-variant limit (variant_held in variant_holdings.lua reads them).
func VariantHoldingFields(variants map[buyer.ID]map[int]int64, add func(field string, n int64)) {
	for who, vs := range variants {
		for i, n := range vs {
			if n > 0 {
				add(VariantUnitsField(who, VariantAt(i)), n)
			}
		}
	}
}

// ParseHoldings adds to held what each buyer holds (units) in a users hash read whole,
// skipping the fields that are not holdings (participations, a lock, an allowance).
func ParseHoldings(hash map[string]string, held map[buyer.ID]int64) error {
	for k, v := range hash {
		kind, who, err := BuyerField(k)
		if err != nil {
			return err
		}
		if kind != UnitsKind {
			continue
		}
		units, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("malformed holding %q=%q", k, v)
		}
		held[who] += units
	}
	return nil
}
