package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/snapshot"
)

// clock is a settable time.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// A crowd asking at once gets one load, whose result all of them answer; the value is
// loaded again in the next second of the clock (not a second after the load: in step
// with a cache in front), and Expire makes the next Get load.
func TestOneLoadPerInterval(t *testing.T) {
	c := &clock{}
	v := snapshot.New[int]("test", time.Second)
	v.SetClock(c.now)
	var loads atomic.Int32
	release := make(chan struct{})
	load := func(ctx context.Context) (int, error) {
		<-release
		return int(loads.Add(1)), nil
	}
	var wg sync.WaitGroup
	got := make([]int, 200)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := v.Get(context.Background(), load)
			if err != nil {
				t.Error(err)
			}
			got[i] = n
		}()
	}
	time.Sleep(20 * time.Millisecond) // let them queue behind the first load
	close(release)
	wg.Wait()
	for i, n := range got {
		if n != 1 {
			t.Fatalf("caller %d got load %d, want 1: the crowd shares one load", i, n)
		}
	}
	tests := []struct {
		name  string
		step  func()
		loads int32
	}{
		{"within the interval", func() { c.add(999 * time.Millisecond) }, 1},
		{"at the interval", func() { c.add(time.Millisecond) }, 2},
		{"right after that load", func() {}, 2},
		{"expired by this process", v.Expire, 3},
		{"late in a later second", func() { c.add(1900 * time.Millisecond) }, 4},
		{"in the next second of the clock, 100 ms after that load", func() { c.add(100 * time.Millisecond) }, 5},
	}
	for _, tc := range tests {
		tc.step()
		if n, err := v.Get(context.Background(), load); err != nil || int32(n) != tc.loads || loads.Load() != tc.loads {
			t.Errorf("%s: got %d (%v) after %d loads, want load %d", tc.name, n, err, loads.Load(), tc.loads)
		}
	}
}

// A failed load is the answer until the interval has passed, wrapped as a *Failed that
// says it is logged, and logged once however many ask; a caller whose context ends
// does not cancel the load the others wait for.
func TestFailureAnsweredAndLoggedOnce(t *testing.T) {
	var log bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	c := &clock{}
	v := snapshot.New[string]("sales", time.Second)
	v.SetClock(c.now)
	down := errors.New("mysql down")
	var loads atomic.Int32
	load := func(ctx context.Context) (string, error) {
		loads.Add(1)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", down
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 1000 {
		ctx := context.Background()
		if i == 0 {
			ctx = ended
		}
		_, err := v.Get(ctx, load)
		var failed *snapshot.Failed
		if !errors.Is(err, down) || !errors.As(err, &failed) || !failed.Logged() {
			t.Fatalf("get %d: %v, want the load's failure as a *Failed", i, err)
		}
	}
	if loads.Load() != 1 || strings.Count(log.String(), "load failed") != 1 {
		t.Errorf("1000 gets within the interval: %d loads, log %q; want one of each", loads.Load(), log.String())
	}
	if _, ok := v.Last(); ok {
		t.Error("Last reports a value after a failed load")
	}
	c.add(time.Second)
	if _, err := v.Get(context.Background(), func(context.Context) (string, error) { return "back", nil }); err != nil {
		t.Errorf("the load after the interval: %v", err)
	}
	if last, ok := v.Last(); !ok || last != "back" {
		t.Errorf("Last: %q %v, want back", last, ok)
	}
}

// A Map keeps one value per key, each loaded on its own schedule.
func TestMapLoadsPerKey(t *testing.T) {
	c := &clock{}
	m := snapshot.NewMap[int64, int64]("statuses", time.Second)
	m.SetClock(c.now)
	loads := map[int64]int{}
	var mu sync.Mutex
	get := func(key int64) int64 {
		n, err := m.Get(context.Background(), key, func(context.Context) (int64, error) {
			mu.Lock()
			defer mu.Unlock()
			loads[key]++
			return key * 10, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 100 {
		if get(1) != 10 || get(2) != 20 {
			t.Fatal("a key answered another's value")
		}
	}
	c.add(time.Second)
	get(1)
	if loads[1] != 2 || loads[2] != 1 {
		t.Errorf("loads %v, want key 1 twice (asked again after the interval), key 2 once", loads)
	}
}

// loadedOnce returns a Value of a second on clock c, with 1 loaded.
func loadedOnce(t *testing.T, c *clock) *snapshot.Value[int] {
	t.Helper()
	v := snapshot.New[int]("test", time.Second)
	v.SetClock(c.now)
	if n, err := v.Get(context.Background(), func(context.Context) (int, error) { return 1, nil }); n != 1 || err != nil {
		t.Fatalf("first load: %d %v", n, err)
	}
	return v
}

// slowLoad starts a Get of v whose load (of 2) waits for release, and returns once the
// load has begun; the loader's answer comes on loaded.
func slowLoad(v *snapshot.Value[int]) (release chan<- struct{}, loaded <-chan int) {
	started, rel, got := make(chan struct{}), make(chan struct{}), make(chan int, 1)
	go func() {
		n, _ := v.Get(context.Background(), func(context.Context) (int, error) {
			close(started)
			<-rel
			return 2, nil
		})
		got <- n
	}()
	<-started
	return rel, got
}

// noSecondLoad is a load that must not run: one is under way.
func noSecondLoad(t *testing.T) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		t.Error("a second load began while one was under way")
		return 0, nil
	}
}

// afterLoad closes release and checks that the loader, then anyone, gets 2.
func afterLoad(t *testing.T, v *snapshot.Value[int], release chan<- struct{}, loaded <-chan int) {
	t.Helper()
	close(release)
	if n := <-loaded; n != 2 {
		t.Fatalf("the loader got %d, want 2", n)
	}
	if n, _ := v.Get(context.Background(), nil); n != 2 {
		t.Errorf("after the load: %d, want 2", n)
	}
}

// While one caller loads the next value (a slow store), the others get the last one at
// once, not a wait; and once that load is in, they get the new one.
func TestLastValueWhileLoading(t *testing.T) {
	c := &clock{}
	v := loadedOnce(t, c)
	c.add(time.Second)
	release, loaded := slowLoad(v)
	for range 100 {
		if n, err := v.Get(context.Background(), noSecondLoad(t)); n != 1 || err != nil {
			t.Fatalf("during the load: %d %v, want the last value 1", n, err)
		}
	}
	afterLoad(t, v, release, loaded)
}

// No answer is older than an interval: once the last value is (a crowd that came back
// after a quiet spell), or after Expire, those who ask while one caller loads the next
// wait for that load rather than get the last value.
func TestNoAnswerOlderThanAnInterval(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stale func(*snapshot.Value[int], *clock)
	}{
		{"a quiet spell", func(_ *snapshot.Value[int], c *clock) { c.add(1500 * time.Millisecond) }},
		{"expired", func(v *snapshot.Value[int], _ *clock) { v.Expire() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{}
			v := loadedOnce(t, c)
			tt.stale(v, c)
			release, loaded := slowLoad(v)
			got := make(chan int, 10)
			for range cap(got) {
				go func() {
					n, _ := v.Get(context.Background(), noSecondLoad(t))
					got <- n
				}()
			}
			select {
			case n := <-got:
				t.Fatalf("during the load: %d at once, want a wait for the load", n)
			case <-time.After(50 * time.Millisecond): // well within StaleWait
			}
			afterLoad(t, v, release, loaded)
			for range cap(got) {
				if n := <-got; n != 2 {
					t.Errorf("after the load: %d, want 2", n)
				}
			}
		})
	}
}

// A slow store: those who wait for a load that takes longer than StaleWait get the last
// value, however old, rather than a wait of up to LoadTimeout; the load goes on, and its
// value is answered once in.
func TestSlowStoreAnswersTheLast(t *testing.T) {
	c := &clock{}
	v := loadedOnce(t, c)
	c.add(5 * time.Second)
	release, loaded := slowLoad(v)
	asked := time.Now()
	n, err := v.Get(context.Background(), noSecondLoad(t))
	if waited := time.Since(asked); n != 1 || err != nil || waited < snapshot.StaleWait {
		t.Errorf("during a slow load: %d %v after %v; want the last value 1 after StaleWait (%v)", n, err, waited, snapshot.StaleWait)
	}
	afterLoad(t, v, release, loaded)
}
