package presence

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is how a purchase was answered, as Answers counts it.
type Outcome uint8

// The outcomes Answers counts; other answers (a replay's 200, a 400, a 404) are not.
const (
	Accepted      Outcome = iota // 202: the units were taken
	SoldOut                      // 409 sold_out
	LimitExceeded                // 409 limit_exceeded
	Refused                      // another 409, such as sale_not_started or sale_ended
	RateLimited                  // 429 rate_limited or busy
	Unavailable                  // 503 unavailable
	numOutcomes
)

// outcomeKeys are the outcomes' keys in SaleAnswers.PerSecond.
var outcomeKeys = [numOutcomes]string{"202", "409_sold_out", "409_limit_exceeded", "409_other", "429", "503"}

// String returns the outcome's key in SaleAnswers.PerSecond, such as "409_sold_out".
func (o Outcome) String() string {
	if o >= numOutcomes {
		return "unknown"
	}
	return outcomeKeys[o]
}

// SaleAnswers is one sale's purchase answers per second in one heartbeat's interval.
type SaleAnswers struct {
	ActivityID int64 `json:"activity_id"`
	// PerSecond maps an outcome ("202", "409_sold_out", "409_limit_exceeded",
	// "409_other", "429", "503") to its answers per second; outcomes without answers
	// are left out.
	PerSecond map[string]float64 `json:"answers_per_second"`
}

const (
	// MaxSalesPerBeat bounds the sales one heartbeat carries: the most answered ones.
	MaxSalesPerBeat = 50
	// maxTrackedSales bounds the sales counted at once; a request for one more (the
	// path's id is the client's) is not counted until an idle sale is forgotten.
	maxTrackedSales = 4096
	// forgetAfter is how long a sale without answers keeps its counters.
	forgetAfter = time.Minute
)

// saleCounts are one sale's answers since it was first counted, by outcome.
type saleCounts [numOutcomes]atomic.Uint64

// Answers counts a process's purchase answers by sale and outcome, for its heartbeat.
// Count is safe for concurrent use and neither locks nor allocates once a sale has its
// counters; Rates turns the counts into answers per second since its previous call.
type Answers struct {
	// sales is replaced, never changed, so Count reads it without a lock: a sale's
	// first answer and Rates forgetting idle sales copy it under mu.
	sales atomic.Pointer[map[int64]*saleCounts]

	mu       sync.Mutex
	last     map[int64][numOutcomes]uint64 // counts at the previous Rates
	lastBusy map[int64]time.Time           // when each sale last had answers
	lastAt   time.Time
	now      func() time.Time
}

// NewAnswers returns an empty count.
func NewAnswers() *Answers {
	a := &Answers{last: map[int64][numOutcomes]uint64{}, lastBusy: map[int64]time.Time{}, now: time.Now}
	a.sales.Store(&map[int64]*saleCounts{})
	a.lastAt = a.now()
	return a
}

// SetClock replaces the clock (tests); call it before anything is counted.
func (a *Answers) SetClock(now func() time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.now = now
	a.lastAt = now()
}

// Count records one answer of outcome o to a purchase in the sale activityID.
func (a *Answers) Count(activityID int64, o Outcome) {
	if o >= numOutcomes {
		return
	}
	c, ok := (*a.sales.Load())[activityID]
	if !ok {
		if c = a.add(activityID); c == nil {
			return
		}
	}
	c[o].Add(1)
}

// add returns the counters of a sale counted for the first time, or nil when
// maxTrackedSales are counted already.
func (a *Answers) add(activityID int64) *saleCounts {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := *a.sales.Load()
	if c, ok := old[activityID]; ok {
		return c // another request added it meanwhile
	}
	if len(old) >= maxTrackedSales {
		return nil
	}
	next := make(map[int64]*saleCounts, len(old)+1)
	for id, c := range old {
		next[id] = c
	}
	c := new(saleCounts)
	next[activityID] = c
	a.lastBusy[activityID] = a.now() // not forgotten before its first answer is in
	a.sales.Store(&next)
	return c
}

// Rates returns the answers per second of every sale answered since the previous
// call (or since NewAnswers), at most MaxSalesPerBeat of them, the most answered,
// by activity id; nil when none was. It forgets the counters of sales without
// answers for a minute (an answer counted at that very moment may be lost).
func (a *Answers) Rates() []SaleAnswers {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	seconds := now.Sub(a.lastAt).Seconds()
	a.lastAt = now
	type busy struct {
		id     int64
		total  uint64
		deltas [numOutcomes]uint64
	}
	var answered []busy
	sales := *a.sales.Load()
	var idle []int64
	for id, c := range sales {
		b := busy{id: id}
		prev := a.last[id]
		var counts [numOutcomes]uint64
		for o := range c {
			counts[o] = c[o].Load()
			b.deltas[o] = counts[o] - prev[o]
			b.total += b.deltas[o]
		}
		a.last[id] = counts
		switch {
		case b.total > 0:
			a.lastBusy[id] = now
			answered = append(answered, b)
		case now.Sub(a.lastBusy[id]) >= forgetAfter:
			idle = append(idle, id)
		}
	}
	a.forget(sales, idle)
	if len(answered) == 0 || seconds <= 0 {
		return nil
	}
	if len(answered) > MaxSalesPerBeat {
		slices.SortFunc(answered, func(x, y busy) int { return cmp.Compare(y.total, x.total) })
		answered = answered[:MaxSalesPerBeat]
	}
	slices.SortFunc(answered, func(x, y busy) int { return cmp.Compare(x.id, y.id) })
	out := make([]SaleAnswers, len(answered))
	for i, b := range answered {
		per := make(map[string]float64, 2)
		for o, n := range b.deltas {
			if n > 0 {
				per[outcomeKeys[o]] = math.Round(float64(n)/seconds*100) / 100
			}
		}
		out[i] = SaleAnswers{ActivityID: b.id, PerSecond: per}
	}
	return out
}

// forget drops the counters of idle sales; mu is held.
func (a *Answers) forget(sales map[int64]*saleCounts, idle []int64) {
	if len(idle) == 0 {
		return
	}
	next := make(map[int64]*saleCounts, len(sales)-len(idle))
	for id, c := range sales {
		next[id] = c
	}
	for _, id := range idle {
		delete(next, id)
		delete(a.last, id)
		delete(a.lastBusy, id)
	}
	a.sales.Store(&next)
}

// WithSales makes each heartbeat carry the sales a answered since the previous one
// (Instance.Sales, from a.Rates).
func WithSales(a *Answers) Option {
	return func(inst *Instance) { inst.Sales = a.Rates() }
}
