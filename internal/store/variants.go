package store

import (
	"fmt"
	"maps"
	"slices"

	"gorm.io/gorm"

	"seckill/internal/buyer"
)

// A sale of variants keeps each variant's row in activity_variants: its name, its
// stock_total and its sold units, which move with activities.sold under the same guard
// (a variant is never sold past its stock in MySQL either). An order names its variant
// by index (variant_index, as Redis keeps it) and by name (variant, as the API shows
// it), the name written from the index with the row.

// variantKey is a variant of an activity.
type variantKey struct {
	activityID int64
	idx        int
}

// nameVariants writes the name of each order's variant (by its index) into the orders,
// reading the names of the sales they are of in one query; orders without a variant are
// left as they are.
func nameVariants(tx *gorm.DB, orders []NewOrder) error {
	var acts []int64
	for _, o := range orders {
		if o.VariantIndex != nil && !slices.Contains(acts, o.ActivityID) {
			acts = append(acts, o.ActivityID)
		}
	}
	if len(acts) == 0 {
		return nil
	}
	var vs []Variant
	if err := tx.Select("activity_id", "idx", "name").Where("activity_id IN ?", acts).Find(&vs).Error; err != nil {
		return fmt.Errorf("read variant names: %w", err)
	}
	names := make(map[variantKey]string, len(vs))
	for _, v := range vs {
		names[variantKey{v.ActivityID, v.Idx}] = v.Name
	}
	for i := range orders {
		o := &orders[i]
		if o.VariantIndex == nil {
			continue
		}
		name, ok := names[variantKey{o.ActivityID, *o.VariantIndex}]
		if !ok {
			return &guardError{fmt.Sprintf("no variant %d in sale %d", *o.VariantIndex, o.ActivityID)}
		}
		o.Variant = &name
	}
	return nil
}

// variantUnits sums the orders' units by variant, those without one left out.
func variantUnits(orders []Order) map[variantKey]int64 {
	units := map[variantKey]int64{}
	for _, o := range orders {
		if o.VariantIndex != nil {
			units[variantKey{o.ActivityID, *o.VariantIndex}] += int64(o.Quantity)
		}
	}
	return units
}

// sortedVariants are the keys of units in the order rows are locked: by activity, then
// index.
func sortedVariants(units map[variantKey]int64) []variantKey {
	return slices.SortedFunc(maps.Keys(units), func(a, b variantKey) int {
		if a.activityID != b.activityID {
			return int(a.activityID - b.activityID)
		}
		return a.idx - b.idx
	})
}

// addVariantSold adds the orders' units to their variants' sold, refusing to pass a
// variant's stock_total (a guardError). Called under the activities' row locks.
func addVariantSold(tx *gorm.DB, orders []Order) error {
	units := variantUnits(orders)
	for _, k := range sortedVariants(units) {
		res := tx.Exec("UPDATE activity_variants SET sold = sold + ? WHERE activity_id = ? AND idx = ? AND sold + ? <= stock_total",
			units[k], k.activityID, k.idx, units[k])
		if res.Error != nil {
			return fmt.Errorf("add sold units of variant: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			return &guardError{"sold out in MySQL: no stock of this variant left for this order"}
		}
	}
	return nil
}

// takeBackVariantSold takes the orders' units out of their variants' sold.
func takeBackVariantSold(tx *gorm.DB, orders []Order) error {
	units := variantUnits(orders)
	for _, k := range sortedVariants(units) {
		if err := tx.Exec("UPDATE activity_variants SET sold = sold - ? WHERE activity_id = ? AND idx = ?",
			units[k], k.activityID, k.idx).Error; err != nil {
			return fmt.Errorf("take back sold units of variant: %w", err)
		}
	}
	return nil
}

// variantHoldings reads, by buyer and variant index, the units of a sale's orders that
// hold stock in MySQL (the orders of Holdings), and by variant index the units kept off
// sale whose buyers' holdings Redis has given back (RebuildFacts.OffSale).
func variantHoldings(db *gorm.DB, activityID int64) (map[buyer.ID]map[int]int64, map[int]int64, error) {
	var rows []struct {
		Buyer        buyer.ID
		VariantIndex int
		Units        int64
	}
	err := db.Model(&Order{}).Select("buyer, variant_index, SUM(quantity) AS units").
		Where("activity_id = ? AND variant_index IS NOT NULL AND (status IN ? OR return_pending)", activityID, holding).
		Group("buyer, variant_index").Scan(&rows).Error
	if err != nil {
		return nil, nil, fmt.Errorf("variant holdings of activity %d: %w", activityID, err)
	}
	out := map[buyer.ID]map[int]int64{}
	for _, r := range rows {
		if out[r.Buyer] == nil {
			out[r.Buyer] = map[int]int64{}
		}
		out[r.Buyer][r.VariantIndex] = r.Units
	}
	var off []struct {
		VariantIndex int
		Units        int64
	}
	err = db.Model(&Order{}).Select("variant_index, SUM(quantity) AS units").
		Where("activity_id = ? AND variant_index IS NOT NULL AND NOT return_pending AND "+offSale, activityID).
		Group("variant_index").Scan(&off).Error
	if err != nil {
		return nil, nil, fmt.Errorf("variant units off sale of activity %d: %w", activityID, err)
	}
	offSale := map[int]int64{}
	for _, r := range off {
		offSale[r.VariantIndex] = r.Units
	}
	return out, offSale, nil
}

// variantFigures reads a sale's variants with the units their orders hold and those
// returning, by index (none for a sale without variants).
func variantFigures(tx *gorm.DB, activityID int64) ([]VariantFigures, error) {
	var vs []Variant
	if err := tx.Where("activity_id = ?", activityID).Order("idx").Find(&vs).Error; err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, nil
	}
	var rows []struct {
		VariantIndex                 int
		Held, ReturnPending, OffSale int64
	}
	err := tx.Model(&Order{}).Select("variant_index, "+
		"COALESCE(SUM(CASE WHEN status IN ? THEN quantity END), 0) AS held, "+
		"COALESCE(SUM(CASE WHEN return_pending AND NOT ("+offSale+") THEN quantity END), 0) AS return_pending, "+
		"COALESCE(SUM(CASE WHEN "+offSale+" THEN quantity END), 0) AS off_sale", holding).
		Where("activity_id = ? AND variant_index IS NOT NULL", activityID).Group("variant_index").Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make([]VariantFigures, len(vs))
	for i, v := range vs {
		out[i].Variant = v
	}
	for _, r := range rows {
		if r.VariantIndex >= 0 && r.VariantIndex < len(out) {
			out[r.VariantIndex].Held, out[r.VariantIndex].ReturnPending = r.Held, r.ReturnPending
			out[r.VariantIndex].OffSale = r.OffSale
		}
	}
	return out, nil
}
