package funnel

//go:generate go test -run ^TestScriptFiles$ -args -update

import (
	"context"
	_ "embed"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
)

// refusedKey is a hash of error code -> purchase requests of the sale refused with it,
// summed over every API; in the sale's slot.
func refusedKey(activityID int64) string {
	return stock.Prefix(stock.One(activityID)) + "funnel:refused"
}

//go:embed flush.lua
var flushLua string

var flushScript = redis.NewScript(flushLua)

// Refusals counts, in this process, the purchase requests each sale refused (4xx) by
// error code, and adds them to Redis in batches (Run): a refusal costs the purchase path
// no Redis call of its own, and no lock once its sale has its counters (the common
// codes are atomic counters; a sold-out crowd refuses on every core at once). Count is
// safe for concurrent use.
type Refusals struct {
	sales sync.Map // activity id -> *saleRefusals
	count atomic.Int64
	// maxSales bounds the sales with counters: a path's id is the client's. Past it a
	// refusal of one more sale is not counted (a sale that has its counters keeps them
	// while it has refusals), and each flush forgets the sales it found without any.
	maxSales int64
}

// commonCodes are the refusals counted without a lock; any other code takes its sale's
// mutex.
var commonCodes = [...]string{"sold_out", "limit_exceeded", "not_admitted", "rate_limited", "busy", "sale_not_started",
	"sale_ended", "invalid_request", "unauthorized"}

func commonCode(code string) int {
	for i, c := range commonCodes {
		if c == code {
			return i
		}
	}
	return -1
}

// saleRefusals are one sale's refusals since the last flush.
type saleRefusals struct {
	common [len(commonCodes)]atomic.Int64
	mu     sync.Mutex
	other  map[string]int64
}

// maxPendingSales is Refusals' bound of sales with counters.
const maxPendingSales = 4096

// NewRefusals returns an empty count.
func NewRefusals() *Refusals { return &Refusals{maxSales: maxPendingSales} }

// Count records one purchase request of the sale activityID refused with code.
func (r *Refusals) Count(activityID int64, code string) { r.add(activityID, code, 1) }

// add records n refusals of the sale with code.
func (r *Refusals) add(activityID int64, code string, n int64) {
	v, ok := r.sales.Load(activityID)
	if !ok {
		if r.count.Load() >= r.maxSales {
			return
		}
		var loaded bool
		if v, loaded = r.sales.LoadOrStore(activityID, &saleRefusals{}); !loaded {
			r.count.Add(1)
		}
	}
	s := v.(*saleRefusals)
	if i := commonCode(code); i >= 0 {
		s.common[i].Add(n)
		return
	}
	s.mu.Lock()
	if s.other == nil {
		s.other = map[string]int64{}
	}
	s.other[code] += n
	s.mu.Unlock()
}

// take returns what was counted since the last flush, and starts anew. With the bound
// reached, it forgets the sales that had no refusal since then (a refusal counted at
// that very moment may be lost).
func (r *Refusals) take() map[int64]map[string]int64 {
	out := map[int64]map[string]int64{}
	full := r.count.Load() >= r.maxSales
	r.sales.Range(func(k, v any) bool {
		s := v.(*saleRefusals)
		byCode := map[string]int64{}
		for i := range s.common {
			if n := s.common[i].Swap(0); n > 0 {
				byCode[commonCodes[i]] = n
			}
		}
		s.mu.Lock()
		for code, n := range s.other {
			byCode[code] = n
		}
		s.other = nil
		s.mu.Unlock()
		switch {
		case len(byCode) > 0:
			out[k.(int64)] = byCode
		case full:
			r.sales.Delete(k)
			r.count.Add(-1)
		}
		return true
	})
	return out
}

// giveBack returns counts a flush could not write, to be tried again with the next.
func (r *Refusals) giveBack(activityID int64, byCode map[string]int64) {
	for code, n := range byCode {
		r.add(activityID, code, n)
	}
}

// FlushEvery is how often Run adds the counts to Redis: a refusal reaches the funnel
// within it (the contract allows 5 s).
const FlushEvery = 2 * time.Second

// Kept adds refusals to what MySQL keeps of an archived sale's funnel (*Funnel).
type Kept interface {
	AddRefused(ctx context.Context, activityID int64, byCode map[string]int64) error
}

var _ Kept = (*Funnel)(nil)

// Run flushes every FlushEvery until ctx ends, then once more (a clean shutdown loses
// nothing; a killed process loses its last interval).
func (r *Refusals) Run(ctx context.Context, rdb redis.Scripter, kept Kept) {
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			r.Flush(fctx, rdb, kept)
			return
		case <-t.C:
			r.Flush(ctx, rdb, kept)
		}
	}
}

// Flush adds what was counted since the last flush to Redis, one script per sale, and
// those of a sale Redis does not hold live to kept: an archived sale's go to MySQL, any
// other's (unknown, lost, being archived) are dropped. The counts of a flush that fails
// (Redis or MySQL does not answer) wait for the next.
func (r *Refusals) Flush(ctx context.Context, rdb redis.Scripter, kept Kept) {
	failed := 0
	for id, byCode := range r.take() {
		args := make([]any, 0, 2*len(byCode))
		for code, n := range byCode {
			args = append(args, code, strconv.FormatInt(n, 10))
		}
		live, err := flushScript.Run(ctx, rdb, []string{stock.SaleKey(stock.One(id)), refusedKey(id)}, args...).Int()
		if err == nil && live == 0 {
			err = kept.AddRefused(ctx, id, byCode)
		}
		if err != nil {
			r.giveBack(id, byCode)
			if failed++; failed == 1 {
				slog.Warn("funnel: refusals not flushed; tried again next time", "err", err)
			}
		}
	}
}
