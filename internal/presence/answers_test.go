package presence_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"seckill/internal/presence"
	"seckill/internal/testutil"
)

// answersAt returns an Answers on a clock the test moves with the returned function.
func answersAt(t *testing.T) (*presence.Answers, func(time.Duration)) {
	t.Helper()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	a := presence.NewAnswers()
	a.SetClock(func() time.Time { return now })
	return a, func(d time.Duration) { now = now.Add(d) }
}

func TestAnswersRates(t *testing.T) {
	a, advance := answersAt(t)
	count := func(id int64, o presence.Outcome, n int) {
		for range n {
			a.Count(id, o)
		}
	}
	steps := []struct {
		name  string
		count func()
		after time.Duration
		want  []presence.SaleAnswers
	}{
		{"nothing answered", func() {}, 2 * time.Second, nil},
		{"two sales, by outcome", func() {
			count(7, presence.Accepted, 20)
			count(7, presence.SoldOut, 5)
			count(3, presence.LimitExceeded, 1)
			count(3, presence.RateLimited, 8)
			count(3, presence.Unavailable, 2)
			count(3, presence.Refused, 4)
		}, 2 * time.Second, []presence.SaleAnswers{
			{ActivityID: 3, PerSecond: map[string]float64{"409_limit_exceeded": 0.5, "429": 4, "503": 1, "409_other": 2}},
			{ActivityID: 7, PerSecond: map[string]float64{"202": 10, "409_sold_out": 2.5}},
		}},
		{"only the sale answered since the last beat", func() { count(7, presence.SoldOut, 3) }, 3 * time.Second,
			[]presence.SaleAnswers{{ActivityID: 7, PerSecond: map[string]float64{"409_sold_out": 1}}}},
		{"quiet", func() {}, 2 * time.Second, nil},
	}
	for _, st := range steps {
		st.count()
		advance(st.after)
		if diff := cmp.Diff(st.want, a.Rates()); diff != "" {
			t.Errorf("%s: rates (-want +got):\n%s", st.name, diff)
		}
	}
}

// TestAnswersForgetsIdleSales: a sale without answers for a minute loses its counters
// and comes back from zero at its next answer.
func TestAnswersForgetsIdleSales(t *testing.T) {
	a, advance := answersAt(t)
	a.Count(1, presence.Accepted)
	advance(time.Second)
	a.Rates()
	for range 30 { // two more minutes of beats without answers
		advance(4 * time.Second)
		if got := a.Rates(); got != nil {
			t.Fatalf("quiet beat: got %v, want nil", got)
		}
	}
	a.Count(1, presence.Accepted)
	a.Count(1, presence.Accepted)
	advance(2 * time.Second)
	want := []presence.SaleAnswers{{ActivityID: 1, PerSecond: map[string]float64{"202": 1}}}
	if diff := cmp.Diff(want, a.Rates()); diff != "" {
		t.Errorf("after being forgotten (-want +got):\n%s", diff)
	}
}

// TestAnswersKeepsHeartbeatsSmall: a beat carries the MaxSalesPerBeat most answered
// sales.
func TestAnswersKeepsHeartbeatsSmall(t *testing.T) {
	a, advance := answersAt(t)
	for id := int64(1); id <= presence.MaxSalesPerBeat+20; id++ {
		for range id { // sale id has id answers
			a.Count(id, presence.Accepted)
		}
	}
	advance(time.Second)
	got := a.Rates()
	if len(got) != presence.MaxSalesPerBeat {
		t.Fatalf("a beat carries %d sales, want %d", len(got), presence.MaxSalesPerBeat)
	}
	if first, last := got[0].ActivityID, got[len(got)-1].ActivityID; first != 21 || last != presence.MaxSalesPerBeat+20 {
		t.Errorf("sales %d..%d carried, want the most answered, 21..%d", first, last, presence.MaxSalesPerBeat+20)
	}
}

// TestAnswersConcurrent: answers counted from many goroutines, some for sales new to
// the count, while beats read them: every answer is in the rates once.
func TestAnswersConcurrent(t *testing.T) {
	a := presence.NewAnswers()
	// Each beat is one second after the previous one, so its rates are its counts.
	var clock atomic.Int64
	a.SetClock(func() time.Time { return time.Unix(clock.Load(), 0) })
	const goroutines, each, sales = 16, 5000, 40
	var total float64
	beat := func() {
		clock.Add(1)
		for _, s := range a.Rates() {
			for _, v := range s.PerSecond {
				total += v
			}
		}
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				beat()
				// Heartbeats as often as the counting goroutines can meet them: the race under test.
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				a.Count(int64(1+(g*each+i)%sales), presence.Outcome(i%6))
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-stopped
	beat()
	if want := float64(goroutines * each); total != want {
		t.Errorf("answers in the rates: got %v, want %v", total, want)
	}
}

// TestHeartbeatCarriesSales: the sales WithSales adds are in the listed instance, and
// a beat without answers leaves them out.
func TestHeartbeatCarriesSales(t *testing.T) {
	r := presence.New(testutil.StartRedis(t).Client(t))
	a := presence.NewAnswers()
	for range 10 {
		a.Count(5, presence.Accepted)
	}
	a.Count(5, presence.SoldOut)
	inst := presence.NewInstance("api", "127.0.0.1:8081")
	stop := r.Start(inst, nil, presence.WithSales(a))
	defer stop()
	ctx := context.Background()
	var got []presence.Instance
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if got, err = r.List(ctx); err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 {
			break
		}
	}
	if len(got) != 1 || len(got[0].Sales) != 1 {
		t.Fatalf("listed %+v, want one instance with one sale", got)
	}
	s := got[0].Sales[0]
	if s.ActivityID != 5 || s.PerSecond["202"] <= 0 || s.PerSecond["409_sold_out"] <= 0 || len(s.PerSecond) != 2 {
		t.Errorf("sale in the heartbeat: %+v, want sale 5 with 202 and 409_sold_out", s)
	}
	// The next beat, 2 s later, has no answers to carry.
	// A heartbeat interval with no answers passes: the behaviour under test.
	time.Sleep(presence.Interval + 500*time.Millisecond)
	if got, err := r.List(ctx); err != nil || len(got) != 1 || got[0].Sales != nil {
		t.Errorf("after a quiet interval: %+v %v, want one instance without sales", got, err)
	}
}

func BenchmarkAnswersCount(b *testing.B) {
	a := presence.NewAnswers()
	for id := int64(1); id <= 20; id++ {
		a.Count(id, presence.Accepted)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			a.Count(int64(1+i%20), presence.Outcome(i%6))
			i++
		}
	})
}

func BenchmarkAnswersCountOneSale(b *testing.B) {
	a := presence.NewAnswers()
	a.Count(1, presence.Accepted)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.Count(1, presence.Accepted)
		}
	})
}
