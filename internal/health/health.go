// Package health knows whether the servers a process depends on answer, and answers
// the probes from that. Each server is pinged in the background (a Check), so a probe
// reads the last result and answers at once, whatever the server does: a frozen MySQL
// never holds a load balancer's or Kubernetes' probe. Anything else that must know
// whether a server answers reads the same Check.
package health

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Every and Timeout are how often a Check pings and how long a ping may take before
// the server counts as down. A server that stops answering is down within
// Every + Timeout, and one that answers again is up within Every (plus its ping):
// inside the probes' bounds of 3 s and 5 s.
const (
	Every   = time.Second
	Timeout = time.Second
)

// Check is the state of one server, as its last ping found it.
type Check struct {
	name string
	ok   atomic.Bool
	seen bool // a ping has been judged (the watching goroutine's own)
}

// Watch pings every Every until ctx ends and returns the Check that holds the result.
// A ping that errs, or has not returned within Timeout, marks the server down (a ping
// that ignores its context is waited for before the next one, so they never pile up);
// one that succeeds marks it up. The server counts as down until the first ping
// answers. A change is logged once, not every ping. Each observe function gets every
// ping's result (nil: the server answered) and when the ping was sent, in the watching
// goroutine: what must follow the server's state (the record of MySQL's outages,
// internal/outage) reads it from the one Check instead of pinging again.
func Watch(ctx context.Context, name string, ping func(context.Context) error, observe ...func(err error, sent time.Time)) *Check {
	c := &Check{name: name}
	go func() {
		tick := time.NewTicker(Every)
		defer tick.Stop()
		for {
			sent := time.Now()
			err := c.ping(ctx, ping)
			if ctx.Err() != nil {
				return // the process is stopping: its last ping says nothing of the server
			}
			c.set(err)
			for _, o := range observe {
				o(err, sent)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return c
}

var errTimeout = errors.New("no answer within the check's timeout")

// ping runs one ping, bounded by Timeout whether or not it honours its context.
func (c *Check) ping(ctx context.Context, ping func(context.Context) error) error {
	pctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ping(pctx) }()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		c.set(errTimeout)
		<-done
		return errTimeout
	}
}

func (c *Check) set(err error) {
	ok := err == nil
	if c.ok.Swap(ok) == ok && c.seen {
		return
	}
	c.seen = true
	if ok {
		slog.Info("dependency answers", "server", c.name)
	} else {
		slog.Warn("dependency does not answer", "server", c.name, "err", err)
	}
}

// OK reports whether the server answered its last ping.
func (c *Check) OK() bool { return c.ok.Load() }

// Name is the server's name in the probe's body.
func (c *Check) Name() string { return c.name }

// Probe answers /readyz: ready while every check it needs answers and the process is
// not stopping. The checks it only reports are in the body and never change the
// answer.
type Probe struct {
	need, report []*Check
	stopping     atomic.Bool
	durable      atomic.Int32 // 0: not said; 1: durable; 2: not durable
}

// NewProbe returns a Probe that needs need and reports report.
func NewProbe(need []*Check, report ...*Check) *Probe {
	return &Probe{need: need, report: report}
}

// Stop makes the probe answer not ready from now on (the process is shutting down).
func (p *Probe) Stop() { p.stopping.Store(true) }

// SetDurable says, from now on, in the body's "durable" field, whether an acknowledged
// purchase survives a Redis crash (config.Config.CheckDurability); the field is absent
// until it is said. It never changes the answer.
func (p *Probe) SetDurable(durable bool) {
	if durable {
		p.durable.Store(1)
	} else {
		p.durable.Store(2)
	}
}

// Stopping reports whether Stop was called.
func (p *Probe) Stopping() bool { return p.stopping.Load() }

// Ready reports whether the process takes its work now.
func (p *Probe) Ready() bool {
	if p.stopping.Load() {
		return false
	}
	for _, c := range p.need {
		if !c.OK() {
			return false
		}
	}
	return true
}

// ServeHTTP answers 200 when ready, else 503, with the same body either way:
// {"ready":bool,"<check>":"ok"|"down",...}, the needed checks first, then "durable"
// once SetDurable has said it.
func (p *Probe) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	ready := p.Ready()
	body := strconv.AppendBool([]byte(`{"ready":`), ready)
	for _, c := range append(p.need[:len(p.need):len(p.need)], p.report...) {
		name, _ := json.Marshal(c.name)
		body = append(append(append(body, ','), name...), ':')
		if c.OK() {
			body = append(body, `"ok"`...)
		} else {
			body = append(body, `"down"`...)
		}
	}
	if d := p.durable.Load(); d != 0 {
		body = strconv.AppendBool(append(body, `,"durable":`...), d == 1)
	}
	body = append(body, '}')
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if ready {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(body)
}

// Live answers /healthz: 200 while the process serves HTTP; it asks no server.
func Live(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}
