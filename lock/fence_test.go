package lock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

func TestFencesStrictlyIncreaseUnderContention(t *testing.T) {
	c, srv := newTestClient(t)
	clients := []*Client{c, clientOf(t, srv)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const total, goroutines = 10_000, 8
	var taken, holders, last atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			cl := clients[g%len(clients)]
			for taken.Load() < total {
				l, err := cl.Obtain(ctx, "fenced", 10*time.Second, &Options{Retry: ExponentialBackoff(time.Millisecond, 20*time.Millisecond)})
				if err != nil {
					t.Errorf("obtain: %v", err)
					return
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				// The lock orders the holders, so the swaps happen in the
				// order of the acquisitions.
				if prev := last.Swap(l.Fence()); prev >= l.Fence() {
					t.Errorf("fence %d after %d", l.Fence(), prev)
				}
				taken.Add(1)
				holders.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d acquisitions, last fence %d", taken.Load(), last.Load())
	if taken.Load() < total {
		t.Errorf("%d acquisitions, want %d", taken.Load(), total)
	}
}

// fencedSetScript is the Redis side of a fenced write, as a store that
// protects itself from stale holders would do it: the write is refused when
// its token is lower than the last accepted one.
//
//	KEYS[1] register hash (fence, value)   ARGV[1] fencing token   ARGV[2] value
//
// Returns 1 when written, 0 when refused.
var fencedSetScript = redis.NewScript(`
local last = tonumber(redis.call("HGET", KEYS[1], "fence") or "0")
if tonumber(ARGV[1]) < last then
	return 0
end
redis.call("HSET", KEYS[1], "fence", ARGV[1], "value", ARGV[2])
return 1
`)

type fencedWrite struct {
	Fence, Value int64
}

type fencedState struct {
	Fence, Value int64
}

// fencedRegister is the sequential specification of the fenced register: a
// write with a token at least the last accepted one is accepted, any other
// is refused, and a read returns the last accepted value.
var fencedRegister = porcupine.Model{
	Init: func() any { return fencedState{} },
	Step: func(state, input, output any) (bool, any) {
		st := state.(fencedState)
		switch in := input.(type) {
		case fencedWrite:
			accepted := output.(bool)
			if in.Fence >= st.Fence {
				return accepted, fencedState{Fence: in.Fence, Value: in.Value}
			}
			return !accepted, st
		default: // a read
			return output.(int64) == st.Value, st
		}
	},
	DescribeOperation: func(input, output any) string {
		if w, ok := input.(fencedWrite); ok {
			return fmt.Sprintf("write(fence %d, %d) -> %v", w.Fence, w.Value, output)
		}
		return fmt.Sprintf("read() -> %v", output)
	},
}

// TestFencedWritesAreLinearizable has holders write to a fenced register,
// some of them after pausing past their lease (as a GC pause or a stalled VM
// would), and checks the history with porcupine against the specification
// above: stale writes are refused, the others take effect in fence order.
func TestFencedWritesAreLinearizable(t *testing.T) {
	c, srv := newTestClient(t)
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const clients, rounds, ttl = 6, 40, 40 * time.Millisecond
	base := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	record := func(client int, input, output any, call, ret time.Time) {
		mu.Lock()
		defer mu.Unlock()
		history = append(history, porcupine.Operation{ClientId: client, Input: input, Output: output,
			Call: call.Sub(base).Nanoseconds(), Return: ret.Sub(base).Nanoseconds()})
	}
	var refused atomic.Int64
	var wg sync.WaitGroup
	for id := range clients {
		wg.Go(func() {
			for round := range rounds {
				l, err := c.Obtain(ctx, "register-lock", ttl, &Options{Retry: ExponentialBackoff(time.Millisecond, 10*time.Millisecond)})
				if err != nil {
					t.Errorf("obtain: %v", err)
					return
				}
				if rand.N(4) == 0 {
					// A pause past the lease, which runs out: the behaviour under test.
					time.Sleep(ttl + 10*time.Millisecond)
				}
				value := int64(id*1000 + round)
				call := time.Now()
				ok, err := fencedSetScript.Run(ctx, rdb, []string{"register"}, l.Fence(), value).Int()
				if err != nil {
					t.Errorf("fenced write: %v", err)
					return
				}
				record(id, fencedWrite{Fence: l.Fence(), Value: value}, ok == 1, call, time.Now())
				if ok == 0 {
					refused.Add(1)
				}

				call = time.Now()
				got, err := rdb.HGet(ctx, "register", "value").Int64()
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				record(id, "read", got, call, time.Now())
				_ = l.Release(ctx) // refused after a pause: not ours any more
			}
		})
	}
	wg.Wait()
	t.Logf("%d operations, %d stale writes refused", len(history), refused.Load())
	if refused.Load() == 0 {
		t.Errorf("no write was refused: the pauses did not make any holder stale")
	}
	result, info := porcupine.CheckOperationsVerbose(fencedRegister, history, 30*time.Second)
	if result != porcupine.Ok {
		file := filepath.Join(t.TempDir(), "history.html")
		if err := porcupine.VisualizePath(fencedRegister, info, file); err == nil {
			if data, err := os.ReadFile(file); err == nil {
				_ = os.WriteFile(filepath.Join(os.TempDir(), "lock-fenced-history.html"), data, 0o644)
			}
		}
		t.Fatalf("fenced history is %v, want linearizable (see %s)", result,
			filepath.Join(os.TempDir(), "lock-fenced-history.html"))
	}
}
