package funnel

import (
	"context"
	_ "embed"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
)

// refusedKey is a hash of error code -> purchase requests of the sale refused with it,
// summed over every API; in the sale's slot.
func refusedKey(activityID int64) string { return stock.KeyPrefix(activityID) + "funnel:refused" }

//go:embed flush.lua
var flushLua string

var flushScript = redis.NewScript(stock.SaleLiveLua + flushLua)

// Refusals counts, in this process, the purchase requests each sale refused (4xx) by
// error code, and adds them to Redis in batches (Run): a refusal costs the purchase path
// no Redis call of its own. Count is safe for concurrent use.
type Refusals struct {
	mu      sync.Mutex
	pending map[int64]map[string]int64 // counted since the last flush, by sale and code
	// maxSales bounds the sales counted between two flushes: a path's id is the
	// client's, and a refusal of one more sale is not counted.
	maxSales int
}

// maxPendingSales is Refusals' bound of sales between two flushes.
const maxPendingSales = 4096

// NewRefusals returns an empty count.
func NewRefusals() *Refusals {
	return &Refusals{pending: map[int64]map[string]int64{}, maxSales: maxPendingSales}
}

// Count records one purchase request of the sale activityID refused with code.
func (r *Refusals) Count(activityID int64, code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	byCode, ok := r.pending[activityID]
	if !ok {
		if len(r.pending) >= r.maxSales {
			return
		}
		byCode = map[string]int64{}
		r.pending[activityID] = byCode
	}
	byCode[code]++
}

// take returns what was counted since the last flush and starts anew.
func (r *Refusals) take() map[int64]map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pending
	r.pending = map[int64]map[string]int64{}
	return out
}

// giveBack returns counts a flush could not write, to be tried again with the next.
func (r *Refusals) giveBack(activityID int64, byCode map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	into, ok := r.pending[activityID]
	if !ok {
		into = map[string]int64{}
		r.pending[activityID] = into
	}
	for code, n := range byCode {
		into[code] += n
	}
}

// FlushEvery is how often Run adds the counts to Redis: a refusal reaches the funnel
// within it (the contract allows 5 s).
const FlushEvery = 2 * time.Second

// Run flushes every FlushEvery until ctx ends, then once more (a clean shutdown loses
// nothing; a killed process loses its last interval).
func (r *Refusals) Run(ctx context.Context, rdb redis.Scripter) {
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			r.Flush(fctx, rdb)
			return
		case <-t.C:
			r.Flush(ctx, rdb)
		}
	}
}

// Flush adds what was counted since the last flush to Redis, one script per sale. The
// counts of a flush that fails (Redis does not answer) wait for the next; those of a
// sale Redis does not hold live (unknown, lost, archived) are dropped.
func (r *Refusals) Flush(ctx context.Context, rdb redis.Scripter) {
	failed := 0
	for id, byCode := range r.take() {
		args := make([]any, 0, 2*len(byCode))
		for code, n := range byCode {
			args = append(args, code, strconv.FormatInt(n, 10))
		}
		if err := flushScript.Run(ctx, rdb, []string{stock.SaleKey(id), refusedKey(id)}, args...).Err(); err != nil {
			r.giveBack(id, byCode)
			if failed++; failed == 1 {
				slog.Warn("funnel: refusals not flushed to Redis; tried again next time", "err", err)
			}
		}
	}
}
