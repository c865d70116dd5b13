package lock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// releaseHub is a Client's one pub/sub connection to a Redis server. Waiters
// register for a key's release channel; the hub subscribes to a channel while
// at least one waiter wants it and unsubscribes when the last one leaves.
type releaseHub struct {
	rdb redis.UniversalClient

	// mu guards the fields below. SUBSCRIBE and UNSUBSCRIBE are sent while
	// holding it, so the commands reach Redis in the order of the changes.
	mu       sync.Mutex
	ps       *redis.PubSub // opened on first use
	closed   bool
	channels map[string]*channelWaiters
	pending  map[string]int // SUBSCRIBE commands sent and not yet confirmed
}

type channelWaiters struct {
	waiters []*releaseWatch // in the order they will be woken
	ready   chan struct{}   // closed when Redis confirmed the subscription
	isReady bool
}

func (cw *channelWaiters) markReady() {
	if !cw.isReady {
		cw.isReady = true
		close(cw.ready)
	}
}

func newReleaseHub(rdb redis.UniversalClient) *releaseHub {
	return &releaseHub{
		rdb:      rdb,
		channels: make(map[string]*channelWaiters),
		pending:  make(map[string]int),
	}
}

// add registers w for messages on channel and returns a channel that is
// closed once the subscription is active.
func (h *releaseHub) add(ctx context.Context, channel string, w *releaseWatch) (<-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	cw := h.channels[channel]
	if cw == nil {
		if h.ps == nil {
			h.ps = h.rdb.Subscribe(context.WithoutCancel(ctx))
			go h.receive(h.ps)
		}
		cw = &channelWaiters{ready: make(chan struct{})}
		h.channels[channel] = cw
		h.pending[channel]++
		if err := h.ps.Subscribe(ctx, channel); err != nil {
			// go-redis subscribes again when it reconnects; until then the
			// waiter relies on its backoff.
			cw.waiters = append(cw.waiters, w)
			return nil, err
		}
	}
	cw.waiters = append(cw.waiters, w)
	return cw.ready, nil
}

// remove unregisters w and unsubscribes from channel when nobody is left.
func (h *releaseHub) remove(channel string, w *releaseWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cw := h.channels[channel]
	if cw == nil {
		return
	}
	cw.waiters = slices.DeleteFunc(cw.waiters, func(x *releaseWatch) bool { return x == w })
	if len(w.woken) > 0 {
		// w leaves without using its wake-up: pass it on.
		h.wakeLocked(cw)
	}
	if len(cw.waiters) > 0 || h.closed {
		return
	}
	delete(h.channels, channel)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = h.ps.Unsubscribe(ctx, channel) // on error the reconnect drops it anyway
}

// receive dispatches messages until the hub is closed.
func (h *releaseHub) receive(ps *redis.PubSub) {
	pause := 10 * time.Millisecond
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			if h.isClosed() || errors.Is(err, redis.ErrClosed) {
				return
			}
			// Messages may have been lost while the connection was down: wake
			// everyone to try again, and trust go-redis to subscribe again.
			h.wakeAll(true)
			time.Sleep(pause)
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 10 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Message:
			h.wake(m.Channel)
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.confirm(m.Channel)
			}
		}
	}
}

func (h *releaseHub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

func (h *releaseHub) confirm(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[channel] == 0 {
		return // a resubscription after a reconnect
	}
	// A confirmation may belong to an older SUBSCRIBE of the same channel,
	// sent before an UNSUBSCRIBE; only the last one makes the channel ready.
	if h.pending[channel]--; h.pending[channel] > 0 {
		return
	}
	delete(h.pending, channel)
	if cw := h.channels[channel]; cw != nil {
		cw.markReady()
	}
}

func (h *releaseHub) wake(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cw := h.channels[channel]; cw != nil {
		h.wakeLocked(cw)
	}
}

// wakeLocked hands a release to the waiters of a channel. Only one lock
// holder can follow, so of the waiters parked in Obtain only the first is
// woken, and then moves to the back of the line; waking them all would only
// turn one release into a burst of failing attempts. Waiters between two
// attempts, and those in WaitRelease, are always told.
func (h *releaseHub) wakeLocked(cw *channelWaiters) {
	woke := -1
	for i, w := range cw.waiters {
		switch {
		case w.broadcast || !w.parked.Load():
			w.notify()
		case woke < 0:
			w.notify()
			woke = i
		}
	}
	if woke >= 0 {
		w := cw.waiters[woke]
		cw.waiters = append(slices.Delete(cw.waiters, woke, woke+1), w)
	}
}

// wakeAll wakes every waiter. After a lost connection it also marks every
// channel ready: go-redis subscribes them again as it reconnects, and a
// message missed meanwhile is covered by the wake-up itself.
func (h *releaseHub) wakeAll(reconnecting bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if reconnecting {
		clear(h.pending)
	}
	for _, cw := range h.channels {
		if reconnecting {
			cw.markReady()
		}
		for _, w := range cw.waiters {
			w.notify()
		}
	}
}

func (h *releaseHub) close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	ps := h.ps
	h.mu.Unlock()
	h.wakeAll(false)
	if ps == nil {
		return nil
	}
	return ps.Close()
}

// releaseWatch waits for releases of one key on one or more hubs (one per
// Redis server of a Redlock).
type releaseWatch struct {
	channel   string
	broadcast bool // woken by every release, as WaitRelease is
	hubs      []*releaseHub
	ready     []<-chan struct{}
	woken     chan struct{} // holds one pending wake-up
	parked    atomic.Bool   // in wait, as opposed to between attempts
}

// watchRelease subscribes to key's release channel on every hub. A hub that
// cannot subscribe now is still watched, as go-redis subscribes again when it
// reconnects; meanwhile the backoff covers it.
func watchRelease(ctx context.Context, hubs []*releaseHub, key string, broadcast bool) (*releaseWatch, error) {
	w := &releaseWatch{channel: ReleaseChannel(key), broadcast: broadcast, woken: make(chan struct{}, 1)}
	var errs []error
	for _, h := range hubs {
		ready, err := h.add(ctx, w.channel, w)
		if errors.Is(err, errClosed) {
			errs = append(errs, err)
			continue
		}
		w.hubs = append(w.hubs, h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.ready = append(w.ready, ready)
	}
	return w, errors.Join(errs...)
}

func (w *releaseWatch) notify() {
	select {
	case w.woken <- struct{}{}:
	default:
	}
}

// awaitReady waits until every subscription is active, the context ends, or
// max has passed, and reports whether they all became active.
func (w *releaseWatch) awaitReady(ctx context.Context, max time.Duration) bool {
	timer := time.NewTimer(max)
	defer timer.Stop()
	for _, ready := range w.ready {
		select {
		case <-ready:
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		}
	}
	return true
}

// reset forgets a wake-up that arrived before the attempt about to start.
func (w *releaseWatch) reset() {
	select {
	case <-w.woken:
	default:
	}
}

// wait returns when a release is published, d has passed, or the context
// ended (then with ctx.Err()). A d of zero or less waits for a release only.
func (w *releaseWatch) wait(ctx context.Context, d time.Duration) error {
	var timeout <-chan time.Time
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		timeout = timer.C
	}
	w.parked.Store(true)
	defer w.parked.Store(false)
	select {
	case <-w.woken:
		return nil
	case <-timeout:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *releaseWatch) close() {
	for _, h := range w.hubs {
		h.remove(w.channel, w)
	}
}
