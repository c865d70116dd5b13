package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redlock takes locks on N independent Redis masters with the Redlock
// algorithm: a lock is held when a majority (N/2+1) of them took it, and its
// validity is the TTL less the time acquiring took and less the clock drift
// allowance (TTL/100 + 2ms). Locks come back as *Lock, with the same Release,
// Extend, watchdog and Context as on one server, and with a fencing token
// that grows across the quorum (see Obtain).
//
// Redlock is only as safe as the servers' memory: a master that restarts
// without the keys it had can grant a lock twice. Run the masters with
// appendonly yes and appendfsync always, or keep a restarted master out for
// longer than the longest TTL. The fencing counters need the first: they
// never expire.
type Redlock struct {
	id          string // the message of our releases, so our hubs can skip them
	waiters     *waiters
	nodes       []*redlockNode
	quorum      int
	nodeTimeout time.Duration
}

type redlockNode struct {
	rdb redis.UniversalClient
	hub *releaseHub
}

// RedlockOptions tune a Redlock. The zero value, or nil, gives the defaults.
type RedlockOptions struct {
	// NodeTimeout bounds each command to one master, so that a dead or
	// stalled master costs an attempt little of the TTL. Default 100ms; a
	// command is also never given more than a tenth of the TTL.
	NodeTimeout time.Duration
}

// NewRedlock returns a Redlock over the masters, which must be independent
// servers (not replicas of each other). Give their clients MaxRetries -1 and
// DialerRetries 1, so that a dead master fails an attempt at once rather than
// after go-redis's retries. It panics when given none. Close it to
// close its pub/sub connections; the masters' clients belong to the caller.
func NewRedlock(masters []redis.UniversalClient, opts *RedlockOptions) *Redlock {
	if len(masters) == 0 {
		panic("lock: NewRedlock needs at least one master")
	}
	r := &Redlock{id: NewToken(), quorum: len(masters)/2 + 1, nodeTimeout: 100 * time.Millisecond}
	if opts != nil && opts.NodeTimeout > 0 {
		r.nodeTimeout = opts.NodeTimeout
	}
	var hubs []*releaseHub
	for _, rdb := range masters {
		n := &redlockNode{rdb: rdb, hub: newReleaseHub(rdb, r.id)}
		r.nodes = append(r.nodes, n)
		hubs = append(hubs, n.hub)
	}
	r.waiters = newWaiters(r.id, hubs)
	return r
}

// Close closes the pub/sub connections and wakes the waiters.
func (r *Redlock) Close() error {
	var errs []error
	for _, n := range r.nodes {
		errs = append(errs, n.hub.close())
	}
	return errors.Join(errs...)
}

// Obtain takes the lock named key on a majority of the masters for ttl,
// retrying as opts.Retry says. An attempt that does not win a majority
// within the validity releases what it took on every master. Waiters are
// woken by a release on any master.
//
// The fencing token is one more than the highest counter among the masters
// that granted the lock, written back to them while the lock is still ours.
// Any two majorities share a master, so the next holder reads a counter at
// least this high: tokens grow across the quorum even as masters fail, as
// long as the masters keep their data (see Redlock).
//
// The errors are those of Client.Obtain; when masters failed, ErrNotObtained
// is joined with their errors.
func (r *Redlock) Obtain(ctx context.Context, key string, ttl time.Duration, opts *Options) (*Lock, error) {
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	token := opts.token()
	try := func(ctx context.Context, as listing) (*Lock, error) { return r.try(ctx, key, token, ttl, as) }
	return obtain(ctx, r.waiters, key, opts, opts.freshToken(), try)
}

// redlockObtainScript takes the lock on one master and reads its counter
// (redlock_obtain.lua).
//
//go:embed redlock_obtain.lua
var redlockObtainLua string
var redlockObtainScript = redis.NewScript(redlockObtainLua)

// redlockFenceScript raises one master's fence counter while we hold the lock
// there (redlock_fence.lua).
//
//go:embed redlock_fence.lua
var redlockFenceLua string
var redlockFenceScript = redis.NewScript(redlockFenceLua)

// try makes one Redlock attempt.
func (r *Redlock) try(ctx context.Context, key, token string, ttl time.Duration, as listing) (*Lock, error) {
	hold := r.newHold()
	keys := []string{key, fenceKey(key), waitersKey(key)}
	args := append([]any{token, ttl.Milliseconds()}, as.args()...)
	start := time.Now()
	counters, errs := hold.each(ctx, r.all(), ttl, false, func(ctx context.Context, n *redlockNode) (int64, error) {
		return scriptResult(ctx, n.rdb, redlockObtainScript, keys, args...)
	})
	var granted []int
	var problems []error // why masters did not grant, other than being busy
	var fence int64
	for i, err := range errs {
		switch {
		case err == nil:
			granted = append(granted, i)
			fence = max(fence, counters[i])
		case !errors.Is(err, ErrNotObtained) && err != errNotWaited:
			problems = append(problems, fmt.Errorf("master %d: %w", i, err))
		}
	}
	fence++
	deadline := leaseEnd(start, ttl)
	if len(granted) >= r.quorum && time.Now().Before(deadline) {
		_, fenceErrs := hold.each(ctx, granted, ttl, false, func(ctx context.Context, n *redlockNode) (int64, error) {
			return scriptResult(ctx, n.rdb, redlockFenceScript, keys, token, fence)
		})
		if countNil(fenceErrs) >= r.quorum && time.Now().Before(deadline) {
			return newLock(ctx, hold, key, token, fence, ttl, start), nil
		}
		for j, err := range fenceErrs {
			if err != nil && err != errNotWaited {
				problems = append(problems, fmt.Errorf("master %d: write fence: %w", granted[j], err))
			}
		}
	}
	// Failed: undo on every master, including those whose reply was lost or
	// late, without waking waiters: nobody held the lock.
	hold.each(context.WithoutCancel(ctx), r.all(), 0, true, func(ctx context.Context, n *redlockNode) (int64, error) {
		return scriptResult(ctx, n.rdb, releaseScript, []string{key, waitersKey(key)}, token, "", "")
	})
	return nil, errors.Join(append([]error{ErrNotObtained}, problems...)...)
}

// redlockHold is one lock on the masters, from the first attempt to take it
// to its release. Its commands to each master run one after another, so that
// a release never overtakes a slow SET, which would then take the lock after
// it was given up.
type redlockHold struct {
	r  *Redlock
	mu sync.Mutex
	// last holds, per master, a channel closed when the latest command sent
	// to it has returned.
	last []<-chan struct{}
}

func (r *Redlock) newHold() *redlockHold {
	return &redlockHold{r: r, last: make([]<-chan struct{}, len(r.nodes))}
}

func (r *Redlock) all() []int {
	all := make([]int, len(r.nodes))
	for i := range all {
		all[i] = i
	}
	return all
}

// release releases on every master. It succeeds when a majority released,
// returns ErrNotHeld when too many masters refused for a majority to have
// held the lock, and the masters' errors otherwise; the key then goes at its
// TTL on the masters that did not answer.
func (h *redlockHold) release(ctx context.Context, key, token string) error {
	_, errs := h.each(context.WithoutCancel(ctx), h.r.all(), 0, false, func(ctx context.Context, n *redlockNode) (int64, error) {
		return scriptResult(ctx, n.rdb, releaseScript, []string{key, waitersKey(key)}, token, ReleaseChannel(key), h.r.id)
	})
	err := h.r.outcome(errs)
	if err == nil {
		h.r.nodes[0].hub.wake(ReleaseChannel(key), true)
	}
	return err
}

// extend extends on every master, and succeeds when a majority did within the
// new validity.
func (h *redlockHold) extend(ctx context.Context, key, token string, ttl time.Duration, start time.Time) error {
	_, errs := h.each(ctx, h.r.all(), ttl, false, func(ctx context.Context, n *redlockNode) (int64, error) {
		return scriptResult(ctx, n.rdb, extendScript, []string{key}, token, ttl.Milliseconds())
	})
	if err := h.r.outcome(errs); err != nil {
		return err
	}
	if !time.Now().Before(leaseEnd(start, ttl)) {
		return fmt.Errorf("%w: extended on a majority after the validity", ErrNotHeld)
	}
	return nil
}

// outcome turns per-master results into nil (a majority succeeded),
// ErrNotHeld (a majority cannot have succeeded) or the masters' errors.
func (r *Redlock) outcome(errs []error) error {
	ok, refused := 0, 0
	var failed []error
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrNotHeld):
			refused++
		case err != errNotWaited:
			failed = append(failed, fmt.Errorf("master %d: %w", i, err))
		}
	}
	switch {
	case ok >= r.quorum:
		return nil
	case refused > len(errs)-r.quorum:
		return ErrNotHeld
	}
	return errors.Join(append([]error{fmt.Errorf("%d of %d masters succeeded, %d needed", ok, len(errs), r.quorum)}, failed...)...)
}

// errNoAnswer stands for a master that did not answer in time. go-redis does
// not always honour a context deadline (not while a connection to a stalled
// server says hello), so the node timeout is kept here too. errNotWaited
// stands for a master whose answer no longer mattered.
var (
	errNoAnswer  = errors.New("no answer within the node timeout")
	errNotWaited = errors.New("not waited for")
)

// each runs f on the masters numbered in nodes at once, each after the
// command before it on the same master and under the node timeout, and
// returns their results in the order of nodes once all answered or the
// timeout passed; unless waitAll, also as soon as a quorum succeeded or too
// few are left to make one. A master that did not answer in time reports
// errNoAnswer, one not waited for errNotWaited; its command goes on to its
// end, and the next command to that master waits for it.
func (h *redlockHold) each(ctx context.Context, nodes []int, ttl time.Duration, waitAll bool,
	f func(context.Context, *redlockNode) (int64, error)) ([]int64, []error) {
	timeout := h.r.nodeTimeout
	if ttl > 0 {
		timeout = min(timeout, ttl/10)
	}
	type result struct {
		i   int
		val int64
		err error
	}
	results := make(chan result, len(nodes))
	h.mu.Lock()
	for i, node := range nodes {
		before := h.last[node]
		done := make(chan struct{})
		h.last[node] = done
		go func() {
			defer close(done)
			if before != nil {
				<-before
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			val, err := f(ctx, h.r.nodes[node])
			results <- result{i, val, err}
		}()
	}
	h.mu.Unlock()

	vals := make([]int64, len(nodes))
	errs := make([]error, len(nodes))
	answered := make([]bool, len(nodes))
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	decided := func(ok, left int) bool {
		return !waitAll && (ok >= h.r.quorum || ok+left < h.r.quorum)
	}
	for n, ok := 0, 0; n < len(nodes) && !decided(ok, len(nodes)-n); n++ {
		select {
		case res := <-results:
			vals[res.i], errs[res.i], answered[res.i] = res.val, res.err, true
			if res.err == nil {
				ok++
			}
		case <-timer.C:
			for i := range errs {
				if !answered[i] {
					errs[i] = errNoAnswer
				}
			}
			return vals, errs
		}
	}
	for i := range errs {
		if !answered[i] {
			errs[i] = errNotWaited
		}
	}
	return vals, errs
}

func countNil(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}
