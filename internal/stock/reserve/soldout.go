package reserve

import (
	"sync"
	"sync/atomic"
	"time"

	"seckill/internal/stock"
)

// soldOutTTL bounds how long a sold-out flag answers without asking Redis, in case a
// ReturnedChannel message was missed.
const soldOutTTL = time.Second

// soldOutFlags remembers, in this process, the sales (the variants of a sale of
// variants) Redis said were sold out. A purchase of a flagged sale (variant) is refused
// without a round trip. A sale's flags are dropped when units come back (a message on
// ReturnedChannel). Once a flag is older than soldOutTTL, one purchase at a time goes
// to Redis to check it again, while the others are still refused from the flag.
type soldOutFlags struct {
	flags    sync.Map // activity id -> *soldOutFlag, of a sale without variants
	variants sync.Map // activity id -> *sync.Map of Variant -> *soldOutFlag, of a sale of variants
	// gen changes whenever flags are cleared; a flag computed from a Redis answer
	// older than the last clearing is not set, so a late "sold out" cannot hide units
	// that came back meanwhile.
	gen atomic.Uint64
}

// soldOutFlag is what the purchase that found the sale sold out learned of it: what the
// script checks before the stock, so that the flag answers only what the script would.
type soldOutFlag struct {
	at         time.Time
	room       bool // the sale has a waiting room
	group      bool // a group-buy sale (the flag was set by a seat: a plain sale refuses seats first)
	limit      int  // the per-user limit
	rechecking atomic.Bool
}

func newSoldOutFlags() *soldOutFlags { return &soldOutFlags{} }

func (f *soldOutFlags) epoch() uint64 { return f.gen.Load() }

// check returns the flag when a purchase is refused from it. When the flag is stale
// it lets exactly one caller through with recheck set: that caller must end with set
// (still sold out) or dropRecheck (anything else).
func (f *soldOutFlags) check(activityID int64, variant stock.Variant, now time.Time) (refusing, recheck *soldOutFlag) {
	v, ok := f.load(activityID, variant)
	if !ok {
		return nil, nil
	}
	fl := v.(*soldOutFlag)
	if now.Sub(fl.at) < soldOutTTL || !fl.rechecking.CompareAndSwap(false, true) {
		return fl, nil
	}
	return nil, fl
}

// answers returns the flag when check would refuse a purchase from it now, without
// claiming its re-check.
func (f *soldOutFlags) answers(activityID int64, variant stock.Variant, now time.Time) *soldOutFlag {
	v, ok := f.load(activityID, variant)
	if !ok || now.Sub(v.(*soldOutFlag).at) >= soldOutTTL {
		return nil
	}
	return v.(*soldOutFlag)
}

// load is the flag of a sale's variant (none: the sale's).
func (f *soldOutFlags) load(activityID int64, variant stock.Variant) (any, bool) {
	if variant == 0 { // a sale without variants: one lookup on the sold-out path
		return f.flags.Load(activityID)
	}
	sale, ok := f.variants.Load(activityID)
	if !ok {
		return nil, false
	}
	return sale.(*sync.Map).Load(variant)
}

// mapOf is the map that holds the flags of a sale's variant, keyed as it keeps them.
func (f *soldOutFlags) mapOf(activityID int64, variant stock.Variant) (*sync.Map, any) {
	if variant == 0 {
		return &f.flags, activityID
	}
	sale, _ := f.variants.LoadOrStore(activityID, &sync.Map{})
	return sale.(*sync.Map), variant
}

func (f *soldOutFlags) set(activityID int64, variant stock.Variant, epoch uint64, fl *soldOutFlag) {
	if f.gen.Load() != epoch {
		return
	}
	m, key := f.mapOf(activityID, variant)
	m.Store(key, fl)
	if f.gen.Load() != epoch { // cleared meanwhile: the flag may hide units come back
		m.CompareAndDelete(key, fl)
	}
}

// dropRecheck removes a flag whose re-check did not find the sale sold out.
func (f *soldOutFlags) dropRecheck(activityID int64, variant stock.Variant, fl *soldOutFlag) {
	m, key := f.mapOf(activityID, variant)
	m.CompareAndDelete(key, fl)
}

func (f *soldOutFlags) clear(activityID int64) {
	if activityID == 0 { // every sale (stock.Stock.Watch after a reconnect)
		f.clearAll()
		return
	}
	f.gen.Add(1)
	f.flags.Delete(activityID)
	f.variants.Delete(activityID)
}

func (f *soldOutFlags) clearAll() {
	f.gen.Add(1)
	f.flags.Clear()
	f.variants.Clear()
}
