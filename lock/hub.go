package lock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// releaseHub is a Client's one pub/sub connection to a Redis server. Waiters
// register for a key's release channel; the hub subscribes to a channel while
// at least one waiter wants it.
//
// Two goroutines run once the connection is opened: send brings Redis's
// subscriptions in line with what the waiters want, so that a waiter never
// waits for the network (nor for a dead server) to register, and receive
// hands out the messages. A channel stays subscribed for a while (linger)
// after its last waiter left, so that a busy key does not subscribe and
// unsubscribe with every acquisition.
type releaseHub struct {
	rdb    redis.UniversalClient
	self   string        // the id in our own releases, which wake our waiters directly
	linger time.Duration // how long an unwatched channel stays subscribed

	mu       sync.Mutex
	ps       *redis.PubSub // opened on first use
	closed   bool
	channels map[string]*channelWaiters // the channels watched, or lingering
	sent     map[string]bool            // SUBSCRIBE sent, and no UNSUBSCRIBE since
	pending  map[string]int             // SUBSCRIBE commands not yet confirmed
	kick     chan struct{}              // the channels changed
	done     chan struct{}              // closed by close
}

type channelWaiters struct {
	waiters   []*releaseWatch
	ready     chan struct{} // closed when Redis confirmed the subscription
	isReady   bool
	releases  uint64    // releases seen that woke every watch
	idleSince time.Time // when the last watch left; zero while watched
}

func (cw *channelWaiters) markReady() {
	if !cw.isReady {
		cw.isReady = true
		close(cw.ready)
	}
}

func newReleaseHub(rdb redis.UniversalClient, self string) *releaseHub {
	return &releaseHub{
		rdb:      rdb,
		self:     self,
		linger:   2 * time.Second,
		channels: make(map[string]*channelWaiters),
		sent:     make(map[string]bool),
		pending:  make(map[string]int),
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
}

// add registers w for messages on channel and returns a channel that is
// closed once the subscription is active.
func (h *releaseHub) add(channel string, w *releaseWatch) (<-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	if h.ps == nil {
		h.ps = h.rdb.Subscribe(context.Background())
		go h.send(h.ps)
		go h.receive(h.ps)
	}
	cw := h.channels[channel]
	if cw == nil {
		cw = &channelWaiters{ready: make(chan struct{})}
		h.channels[channel] = cw
		h.kickLocked()
	}
	cw.idleSince = time.Time{}
	cw.waiters = append(cw.waiters, w)
	return cw.ready, nil
}

// releaseMark is what a hub knew of a channel at one moment.
type releaseMark struct {
	cw       *channelWaiters // nil when not watched
	releases uint64
	ready    bool
}

// mark returns what the hub knows of channel now.
func (h *releaseHub) mark(channel string) releaseMark {
	h.mu.Lock()
	defer h.mu.Unlock()
	cw := h.channels[channel]
	if cw == nil {
		return releaseMark{}
	}
	return releaseMark{cw: cw, releases: cw.releases, ready: cw.isReady}
}

// quietSince reports whether the hub has been subscribed to the channel
// without a break since the mark, and has seen no release since.
func (h *releaseHub) quietSince(channel string, m releaseMark) bool {
	return m.ready && h.mark(channel) == m
}

// remove unregisters w, and lets the channel go when nobody is left.
func (h *releaseHub) remove(channel string, w *releaseWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cw := h.channels[channel]
	if cw == nil {
		return
	}
	cw.waiters = slices.DeleteFunc(cw.waiters, func(x *releaseWatch) bool { return x == w })
	if len(cw.waiters) == 0 {
		cw.idleSince = time.Now() // send unsubscribes after the linger
	}
}

func (h *releaseHub) kickLocked() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// send subscribes to the channels waiters want and unsubscribes from those
// that lingered long enough, until the hub is closed. go-redis remembers the
// subscriptions, even those whose command failed, and makes them again when
// it reconnects.
func (h *releaseHub) send(ps *redis.PubSub) {
	sweep := time.NewTicker(h.linger / 2)
	defer sweep.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-h.kick:
		case <-sweep.C:
		}
		var subscribe, unsubscribe []string
		h.mu.Lock()
		for channel, cw := range h.channels {
			if len(cw.waiters) == 0 && time.Since(cw.idleSince) >= h.linger {
				delete(h.channels, channel)
			}
		}
		for channel := range h.channels {
			if !h.sent[channel] {
				subscribe = append(subscribe, channel)
				h.sent[channel] = true
				h.pending[channel]++
			}
		}
		for channel := range h.sent {
			if h.channels[channel] == nil {
				unsubscribe = append(unsubscribe, channel)
				delete(h.sent, channel)
			}
		}
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if len(unsubscribe) > 0 {
			_ = ps.Unsubscribe(ctx, unsubscribe...)
		}
		if len(subscribe) > 0 {
			_ = ps.Subscribe(ctx, subscribe...)
		}
		cancel()
	}
}

// receive hands out messages until the hub is closed.
func (h *releaseHub) receive(ps *redis.PubSub) {
	connected := false
	pause := 10 * time.Millisecond
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			if h.isClosed() || errors.Is(err, redis.ErrClosed) {
				return
			}
			if connected {
				// Messages may have been lost while the connection was
				// down: wake everyone to try again.
				h.wakeAll(true)
				connected = false
			}
			select {
			case <-h.done:
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
			continue
		}
		connected = true
		pause = 10 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Message:
			h.onMessage(m)
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

// wake tells the watches of a channel about a release: all of them, or,
// when the release picked another Client's waiters, only those of
// WaitRelease. A Client has one watch per busy key, shared by its queue of
// waiters, whose head tries again.
func (h *releaseHub) wake(channel string, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cw := h.channels[channel]; cw != nil {
		if all {
			cw.releases++
		}
		for _, w := range cw.waiters {
			if all || w.everyRelease {
				w.notify()
			}
		}
	}
}

// onMessage handles a release message (see listing.go): ours, already
// handled by the release itself; one that picked us, nobody or anyWaiter; or
// one that picked another Client.
func (h *releaseHub) onMessage(m *redis.Message) {
	releaser, picked, _ := strings.Cut(m.Payload, " ")
	if releaser == h.self {
		return
	}
	h.wake(m.Channel, picked == "" || picked == anyWaiter || picked == h.self)
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
		cw.releases++
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
	close(h.done)
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
	channel      string
	everyRelease bool // woken whichever waiter a release picked, as WaitRelease is
	hubs         []*releaseHub
	ready        []<-chan struct{}
	woken        chan struct{} // holds one pending wake-up
}

// watchRelease subscribes to key's release channel on every hub. It fails
// only when the hubs are closed.
func watchRelease(hubs []*releaseHub, key string, everyRelease bool) (*releaseWatch, error) {
	w := &releaseWatch{channel: ReleaseChannel(key), everyRelease: everyRelease, woken: make(chan struct{}, 1)}
	for _, h := range hubs {
		ready, err := h.add(w.channel, w)
		if err != nil {
			return w, err
		}
		w.hubs = append(w.hubs, h)
		w.ready = append(w.ready, ready)
	}
	return w, nil
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
// It does nothing on a nil watch.
func (w *releaseWatch) reset() {
	if w == nil {
		return
	}
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
