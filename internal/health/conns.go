package health

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Conns is the connections of an HTTP server that is to stop without failing a request
// on a connection a client or a front keeps open (nginx's pool to the APIs, a
// kube-proxy'd client): it counts them and, once Drain is called, makes every answer
// close its connection, so a connection closes right after an answer, never under a
// request on its way in, and the client's next request opens a connection elsewhere.
type Conns struct {
	open    atomic.Int64
	closing atomic.Bool
}

// Track counts srv's connections and wraps its handler; call it before srv serves.
func (c *Conns) Track(srv *http.Server) {
	srv.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			c.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.open.Add(-1)
		}
	}
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.closing.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// Drain makes every answer from now on close its connection and waits until no
// connection is open, or ctx ends. Call it once the server's listener is closed: a
// connection then ends after its next answer, or when its client closes it idle (the
// project's nginx after 2 s), so none is left for srv.Shutdown to close under a request
// that is just arriving.
func (c *Conns) Drain(ctx context.Context) {
	c.closing.Store(true)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for c.open.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Open is how many connections are open now.
func (c *Conns) Open() int64 { return c.open.Load() }
