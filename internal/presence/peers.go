package presence

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// Peers is how many processes of one kind are alive, as the heartbeats tell it: the
// count the API's rate limits divide their allowance by (internal/ratelimit). It is
// read again every Interval; until the first read, and while Redis does not answer, it
// keeps what it had (1 at first).
type Peers struct {
	n atomic.Int64
}

// Count returns the live processes of the kind, at least 1 (this one).
func (p *Peers) Count() int { return int(max(1, p.n.Load())) }

// WatchPeers counts the live processes of kind now and then every Interval, until ctx
// ends. The process's own heartbeat must be running (Start) for it to count itself.
func (r *Registry) WatchPeers(ctx context.Context, kind string) *Peers {
	p := &Peers{}
	p.n.Store(1)
	read := func() {
		rctx, cancel := context.WithTimeout(ctx, Interval)
		defer cancel()
		list, err := r.List(rctx)
		if err != nil {
			if ctx.Err() == nil {
				slog.Warn("presence: count peers", "kind", kind, "err", err)
			}
			return
		}
		n := 0
		for _, in := range list {
			if in.Kind == kind {
				n++
			}
		}
		p.n.Store(int64(n))
	}
	read()
	go func() {
		t := time.NewTicker(Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	return p
}
