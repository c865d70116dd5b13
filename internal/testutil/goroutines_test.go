package testutil_test

import (
	"slices"
	"sync"
	"testing"

	"seckill/internal/testutil"
)

// A helper's Fatal on another goroutine ends that goroutine alone, after its defers,
// and the failure reaches the test through Report; a goroutine that fails nothing
// leaves nothing to report.
func TestGoroutinesReport(t *testing.T) {
	rec := &recorder{TB: t}
	g := testutil.NewGoroutines(rec)
	var wg sync.WaitGroup
	after := make(chan string, 3)
	wg.Go(func() {
		defer func() { after <- "deferred" }()
		g.Fatalf("helper failed: %d", 42)
		after <- "went on"
	})
	wg.Go(func() { after <- "fine" })
	wg.Wait()
	close(after)
	var got []string
	for s := range after {
		got = append(got, s)
	}
	if len(got) != 2 || !slices.Contains(got, "deferred") || !slices.Contains(got, "fine") {
		t.Errorf("the goroutines did %v, want the failed one's defer and the other's work, nothing after the Fatalf", got)
	}
	g.Report()
	if len(rec.errors) != 1 || rec.errors[0] != "helper failed: 42" || !rec.failedNow {
		t.Errorf("Report gave the test errors %q, FailNow %v; want the one failure and FailNow", rec.errors, rec.failedNow)
	}

	quiet := &recorder{TB: t}
	testutil.NewGoroutines(quiet).Report()
	if len(quiet.errors) != 0 || quiet.failedNow {
		t.Errorf("nothing failed, yet Report gave %q, FailNow %v", quiet.errors, quiet.failedNow)
	}
}

// recorder stands for a test: it keeps what Report tells it instead of failing t.
type recorder struct {
	testing.TB
	errors    []string
	failedNow bool
}

func (r *recorder) Helper()        {}
func (r *recorder) Error(a ...any) { r.errors = append(r.errors, a[0].(string)) }
func (r *recorder) FailNow()       { r.failedNow = true }
