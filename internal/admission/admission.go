// Package admission bounds the purchases one API process has in flight, in all and
// per sale. A crowd past what the process can serve is refused at once (the caller
// answers 503 with Retry-After) instead of queueing in memory until every buyer times
// out: what is admitted is answered in about bound / throughput seconds, whatever the
// arrival rate.
package admission

import "sync"

// Gate counts what is in flight. The zero bound is no bound.
type Gate struct {
	total, perSale int

	mu     sync.Mutex
	n      int
	bySale map[int64]int // only sales with something in flight: ids from paths stay bounded
}

// New returns a gate admitting at most total purchases at once, and at most perSale of
// one sale; 0 leaves either unbounded.
func New(total, perSale int) *Gate {
	return &Gate{total: total, perSale: perSale, bySale: make(map[int64]int)}
}

// Enter admits one purchase of sale, false when a bound is reached (nothing counted).
// Every true is paired with one Leave of the same sale.
func (g *Gate) Enter(sale int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.total > 0 && g.n >= g.total || g.perSale > 0 && g.bySale[sale] >= g.perSale {
		return false
	}
	g.n++
	if g.perSale > 0 {
		g.bySale[sale]++
	}
	return true
}

// Leave ends a purchase Enter admitted.
func (g *Gate) Leave(sale int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.perSale > 0 {
		if g.bySale[sale]--; g.bySale[sale] <= 0 {
			delete(g.bySale, sale)
		}
	}
}

// InFlight is the number of purchases admitted and not yet left.
func (g *Gate) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}
