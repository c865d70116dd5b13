package stock

import (
	"fmt"
	"strconv"
	"strings"

	"seckill/internal/buyer"
)

// A sale's users hash keeps, for each buyer, fields named by the buyer's key
// (buyer.ID.Key: a decimal buyer's user id, any other '~' and its escaped subject):
//
//	<key>   the units the buyer holds (holdings.go)
//	p<key>  the orders the buyer holds, participations, where the sale counts them
//	        (Counted)
//	l<key>  the buyer's lock (reserve's userlock.go)
//	a<key>  the buyer's attempts allowance as their last reservation left it (the reserve script)
//	q<key>  the ids of the buyer's queued orders, separated by single spaces (the reserve
//	        script and the waitlist's offer add an id, unqueue in units.lua takes it
//	        out; Sales.UserQueued reads it)
//	v<i>:<key>  the units of variant i the buyer holds, where the sale sets a
//	        per-variant limit (variants.go)
//
// A key begins with a digit or '~', so a field's first byte tells its kind and no
// buyer's field is another's. The names are made here only, for Go (the functions
// below) and for the scripts (buyer_fields.lua, whose constants marksLua writes from the
// same marks).
// The marks before a buyer's key in the names of its fields; units have none.
const (
	partsMark     = "p"
	lockMark      = "l"
	allowanceMark = "a"
	variantMark   = "v"
	queuedMark    = "q"
)

// UnitsField is the field of the units a buyer holds.
func UnitsField(who buyer.ID) string { return who.Key() }

// PartsField is the field of the orders a buyer holds (participations).
func PartsField(who buyer.ID) string { return partsMark + who.Key() }

// AllowanceField is the field of a buyer's attempts allowance.
func AllowanceField(who buyer.ID) string { return allowanceMark + who.Key() }

// QueuedField is the field of the ids of a buyer's queued orders.
func QueuedField(who buyer.ID) string { return queuedMark + who.Key() }

// VariantUnitsField is the field of the units of variant v a buyer holds.
func VariantUnitsField(who buyer.ID, v Variant) string {
	i, _ := v.Index()
	return variantMark + strconv.Itoa(i) + ":" + who.Key()
}

// AllowanceFields is the HSCAN pattern of every allowance field.
const AllowanceFields = allowanceMark + "*"

// FieldKind is what a field of the users hash holds.
type FieldKind int

const (
	UnitsKind FieldKind = iota
	PartsKind
	LockKind
	AllowanceKind
	VariantKind
	QueuedKind
	OtherKind // a field of no buyer's kind above
)

// BuyerField reads a field of the users hash: its kind and its buyer. An error for a
// field of a known kind whose key is no buyer's.
func BuyerField(field string) (FieldKind, buyer.ID, error) {
	kind, key := UnitsKind, field
	if field != "" {
		switch field[:1] {
		case partsMark:
			kind, key = PartsKind, field[1:]
		case lockMark:
			kind, key = LockKind, field[1:]
		case allowanceMark:
			kind, key = AllowanceKind, field[1:]
		case queuedMark:
			kind, key = QueuedKind, field[1:]
		case variantMark:
			_, rest, ok := strings.Cut(field, ":")
			if !ok {
				return VariantKind, "", fmt.Errorf("users hash field %q: no variant's index", field)
			}
			kind, key = VariantKind, rest
		default:
			if c := field[0]; c != '~' && (c < '0' || c > '9') {
				return OtherKind, "", nil
			}
		}
	}
	who, err := buyer.FromKey(key)
	if err != nil {
		return kind, "", fmt.Errorf("users hash field %q: %w", field, err)
	}
	return kind, who, nil
}

// Counted reports whether a sale keeps its buyers' orders (participations) beside their
// units: when it caps them (cap > 0) or sells in groups. The one rule, which the
// scripts apply as counted (buyer_fields.lua) and a rebuild as this.
func Counted(cap int, group bool) bool { return cap > 0 || group }

// marksLua defines the marks as the Lua constants PARTS, LOCK, ALLOWANCE, VARIANT and
// QUEUED: the section "marks" of buyer_fields.lua.
func marksLua() string {
	return "local PARTS, LOCK, ALLOWANCE, VARIANT, QUEUED = '" + partsMark + "', '" + lockMark + "', '" + allowanceMark +
		"', '" + variantMark + "', '" + queuedMark + "'\n"
}
