// Package snapshot keeps what a crowd reads and a store answers: a value loaded at most
// once per interval however many ask for it, by one of them while the others get the
// last value if it is at most an interval old (else, or before the first, they wait for
// the load), with a failed load answered (and logged) once for the interval rather than
// tried again, and said again, by every request. So no answer is older than an
// interval, and in a steady crowd nobody but the one loading waits: the last value is
// then the one of the interval before, loaded at its start. A slow store is the one
// exception: a load that takes longer than StaleWait leaves those waiting for it the
// last value, however old, rather than a wait of up to LoadTimeout.
//
// A value belongs to the interval of the clock it was loaded in (for a second: the
// second of the clock, 12:00:07.000 to .999) and is loaded again in the next one asked
// for. So two processes that each keep a snapshot for a second, such as a shared cache
// in front of an API, stay in step: the cache's request at the start of a second finds
// the API's snapshot of the second before expired, and gets a fresh one, not one up to
// a second old already.
package snapshot

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Failed is the error of a failed load, the answer of every Get until the next
// interval. The failure was logged when it happened: whoever answers it need not log it
// again (Logged).
type Failed struct{ Err error }

func (e *Failed) Error() string { return e.Err.Error() }
func (e *Failed) Unwrap() error { return e.Err }

// Logged reports that the failure is in the log already.
func (e *Failed) Logged() bool { return true }

// LoadTimeout bounds a load: past it the load fails, and everyone waiting for it gets
// its failure, rather than waiting on a store that does not answer.
const LoadTimeout = 5 * time.Second

// StaleWait bounds the wait for a load of those who ask while it runs and whose last
// value is too old to answer: past it they get the last value all the same (a store
// that does not answer in that time is failing, and the last value is the best there
// is). A load takes milliseconds when the store is well.
const StaleWait = 250 * time.Millisecond

// Value is one value loaded at most once per interval (its zero value is not ready:
// use New).
type Value[T any] struct {
	name  string
	every time.Duration
	now   func() time.Time

	loading chan struct{} // holds a token while one caller loads (a lock that can be waited for with a bound)
	cur     atomic.Pointer[loaded[T]]
}

type loaded[T any] struct {
	v    T
	err  error
	at   time.Time // the start of the interval it was loaded in; zero: expired
	read time.Time // when its load began, which its age counts from; zero: expired
}

// New returns a Value loaded at most once per every, named name in the log.
func New[T any](name string, every time.Duration) *Value[T] {
	return &Value[T]{name: name, every: every, now: time.Now, loading: make(chan struct{}, 1)}
}

// SetClock replaces the clock that ages the value (tests).
func (s *Value[T]) SetClock(now func() time.Time) { s.now = now }

// Get returns the value, loaded with load first when the last load was in an earlier
// interval of the clock, or there is none: one caller loads, with a context that its
// own end does not cancel (its result may serve others) bounded by LoadTimeout; while
// it does, the others get the last answer at once if it is at most an interval old,
// else they wait for the load (before the first load, and after Expire, too). A failed
// load is logged once and answered as a *Failed until the next interval.
func (s *Value[T]) Get(ctx context.Context, load func(context.Context) (T, error)) (T, error) {
	l := s.cur.Load()
	if l != nil && s.current(l) {
		return l.v, l.err
	}
	switch {
	case l == nil: // none yet: wait for the first
		s.loading <- struct{}{}
	case l.read.IsZero() || s.now().Sub(l.read) > s.every: // too old: wait for the load under way, or load
		wait := time.NewTimer(StaleWait)
		defer wait.Stop()
		select {
		case s.loading <- struct{}{}:
		case <-wait.C: // a slow store: the last value, however old
			return l.v, l.err
		}
	default: // the last, at most an interval old, while another caller loads the next
		select {
		case s.loading <- struct{}{}:
		default:
			return l.v, l.err
		}
	}
	defer func() { <-s.loading }()
	if l := s.cur.Load(); l != nil && s.current(l) { // loaded while this one waited
		return l.v, l.err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LoadTimeout)
	defer cancel()
	read := s.now()
	v, err := load(ctx)
	if err != nil {
		slog.Warn("snapshot: load failed; answered as failed until the next load", "snapshot", s.name,
			"interval", s.every, "err", err)
		err = &Failed{Err: err}
	}
	s.cur.Store(&loaded[T]{v: v, err: err, at: s.now().Truncate(s.every), read: read})
	return v, err
}

// current reports whether l was loaded in the interval of the clock that runs now.
func (s *Value[T]) current(l *loaded[T]) bool { return s.now().Truncate(s.every).Equal(l.at) }

// Last returns the last value loaded without loading one, and false when none was
// loaded or the last load failed.
func (s *Value[T]) Last() (T, bool) {
	l := s.cur.Load()
	if l == nil || l.err != nil {
		var zero T
		return zero, false
	}
	return l.v, true
}

// Expire makes the next Get load, whatever the age of the value, and every Get wait for
// that load: this process has changed what it holds (an admin's create or patch
// answered here).
func (s *Value[T]) Expire() {
	s.loading <- struct{}{}
	defer func() { <-s.loading }()
	if l := s.cur.Load(); l != nil {
		s.cur.Store(&loaded[T]{v: l.v, err: l.err})
	}
}

// Map is a Value per key (a sale's), each loaded at most once per interval.
type Map[K comparable, T any] struct {
	name   string
	every  time.Duration
	now    func() time.Time
	values sync.Map // K -> *Value[T]: read by every request, written once per key
}

// NewMap returns a Map whose values are loaded at most once per every each.
func NewMap[K comparable, T any](name string, every time.Duration) *Map[K, T] {
	return &Map[K, T]{name: name, every: every, now: time.Now}
}

// SetClock replaces the clock that ages the values (tests; before the first Get).
func (m *Map[K, T]) SetClock(now func() time.Time) { m.now = now }

// Get returns key's value as Value.Get does. The caller bounds the keys (the sales
// that exist): a key, once asked for, is kept.
func (m *Map[K, T]) Get(ctx context.Context, key K, load func(context.Context) (T, error)) (T, error) {
	v, ok := m.values.Load(key)
	if !ok {
		fresh := New[T](m.name, m.every)
		fresh.now = m.now
		v, _ = m.values.LoadOrStore(key, fresh)
	}
	return v.(*Value[T]).Get(ctx, load)
}
