package stock

import (
	"strconv"
	"strings"
)

// A sale of variants sells one product in sizes or colours (docs/internals/redis-data.md,
// "Variants"): each variant has its own units under the sale's one
// per-user limit. Its sale hash keeps, beside the sale's own avail and total (what the
// waiting room and the sale's status read), avail:<i> and total:<i> per variant i, and
// variants (how many) and vlimit (the per-variant limit, 0 for none) among its settings;
// a bucket's hash its share avail:<i> of each, and bucket 0 of a sale of several
// buckets the reserve's reserve:<i> beside reserve. A purchase of variant i reads and
// changes avail:<i> beside avail, fields named by the index, so its cost does not grow
// with the number of variants. Every unit of a variant is in its avail:<i> (or
// reserve:<i>, or a move of it) exactly when it is in avail (reserve, the move): the
// two always change together.
// MaxVariants is the most variants a sale may have.
const MaxVariants = 100

// A sale of variants' hash has two fields per variant, up to some 230 fields. Redis
// keeps a hash of few, short fields as a listpack, which HMGET and HSET read from its
// start, field by field: a purchase's HMGET of its sixteen fields would then cost more
// the more variants the sale has (measured: twice the script's time with 100 variants).
// The field tableField holds a value longer than Redis keeps in a listpack
// (hash-max-listpack-value, 64 bytes by default), so the hash is a hash table from its
// creation, where each field costs the same whatever their number.
const tableField = "vtable"

var tableValue = strings.Repeat("-", 512)

// VariantStock is one variant's units in Redis. OffSale, for a rebuild, is its units
// kept off sale (refunded without restock), which no buyer holds.
type VariantStock struct {
	Total, Available int64
	OffSale          int64
}

// VariantField is the field of a sale hash that holds variant v's share of field
// (avail, total, reserve): field itself for no variant.
func VariantField(field string, v Variant) string {
	if i, ok := v.Index(); ok {
		return field + ":" + strconv.Itoa(i)
	}
	return field
}

// UnitsOf sums a sale hash's units of field (avail or reserve) for the sale and per
// variant, from its fields read whole (HGETALL): n variants.
func UnitsOf(hash map[string]string, field string, n int, sum *int64, variants []int64) {
	v, _ := strconv.ParseInt(hash[field], 10, 64)
	*sum += v
	for i := range n {
		v, _ := strconv.ParseInt(hash[VariantField(field, VariantAt(i))], 10, 64)
		variants[i] += v
	}
}
