package testutil

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Goroutines is the testing.TB of a test's helpers that run on goroutines other than
// the test's: Fatal, Fatalf and FailNow record the failure and end the calling goroutine
// alone (runtime.Goexit: its deferred calls run), and Report, called from the test's
// own goroutine once they are done, fails the test with every failure recorded. Error,
// Log and the other methods are the test's, which any goroutine may call.
type Goroutines struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

// NewGoroutines returns the testing.TB of t's helpers on goroutines of their own.
func NewGoroutines(t testing.TB) *Goroutines { return &Goroutines{TB: t} }

// Fatal records args and ends the calling goroutine.
func (g *Goroutines) Fatal(args ...any) { g.end(fmt.Sprint(args...)) }

// Fatalf records the formatted message and ends the calling goroutine.
func (g *Goroutines) Fatalf(format string, args ...any) { g.end(fmt.Sprintf(format, args...)) }

// FailNow records a failure and ends the calling goroutine.
func (g *Goroutines) FailNow() { g.end("FailNow") }

func (g *Goroutines) end(msg string) {
	g.mu.Lock()
	g.failed = append(g.failed, msg)
	g.mu.Unlock()
	runtime.Goexit()
}

// Report fails the test, from its own goroutine, with what the goroutines recorded, and
// ends it if they recorded anything.
func (g *Goroutines) Report() {
	g.TB.Helper()
	g.mu.Lock()
	failed := g.failed
	g.mu.Unlock()
	for _, f := range failed {
		g.TB.Error(f)
	}
	if len(failed) > 0 {
		g.TB.FailNow()
	}
}
