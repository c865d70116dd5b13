package outage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reporter records what a process saw of MySQL (Record).
type Reporter interface {
	Report(ctx context.Context, rep Report) error
}

var _ Reporter = (*Record)(nil)

// Monitor probes MySQL from one process and reports what it sees to the shared record:
// MySQL down when a probe gets no answer within Timeout, up again at the first answer.
// An outage is reported as beginning at the last answer before it, and, renewed at every
// probe while it lasts, as ending at the first answer after it; an outage the process
// could not report (Redis unreachable too) is reported once Redis answers. It is the one
// view a process has of MySQL's state (Up).
type Monitor struct {
	ping     func(ctx context.Context) error
	reporter Reporter
	instance string
	up       atomic.Bool
	gauge    prometheus.Gauge

	// Period is the pause between probes, and Timeout the longest a probe waits.
	Period, Timeout time.Duration
	// OnUp, when set, runs each time MySQL answers again after an outage.
	OnUp func()
}

// NewMonitor returns a monitor of a process of kind ("api", "worker") that probes MySQL
// with ping (on a connection of its own, so a busy pool never looks like an outage) and
// reports to reporter. MySQL counts as up until the first probe says otherwise.
func NewMonitor(ping func(ctx context.Context) error, reporter Reporter, kind string) *Monitor {
	var b [6]byte
	_, _ = rand.Read(b[:])
	m := &Monitor{ping: ping, reporter: reporter, instance: kind + "-" + hex.EncodeToString(b[:]),
		Period: 500 * time.Millisecond, Timeout: time.Second,
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "seckill_mysql_up",
			Help: "1 while MySQL answers this process's probes, 0 while it does not (a MySQL outage, recorded for the pay windows)."})}
	m.up.Store(true)
	m.gauge.Set(1)
	return m
}

// Register adds the monitor's gauge to reg.
func (m *Monitor) Register(reg prometheus.Registerer) { reg.MustRegister(m.gauge) }

// Up reports whether MySQL answered this process's last probe.
func (m *Monitor) Up() bool { return m.up.Load() }

// Run probes MySQL every Period until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	lastAnswer := time.Now()  // the last probe MySQL answered
	var began, back time.Time // the outage under way, or the one whose end is still to be told
	telling := false          // an outage's end is still to be reported
	reportFailing := false
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, m.Timeout)
		err := m.ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		switch {
		case err == nil && !m.up.Load():
			back, telling = now, true
			slog.Info("MySQL answers again", "outage", now.Sub(began).Round(time.Millisecond))
			if m.OnUp != nil {
				m.OnUp()
			}
		case err != nil && m.up.Load():
			if !telling { // a flap before the last outage's end was told joins that outage
				began = lastAnswer
			}
			telling = false
			slog.Warn("MySQL does not answer: pay windows stop running until it does", "err", err)
		}
		if err == nil {
			lastAnswer = now
		}
		m.up.Store(err == nil)
		if err == nil {
			m.gauge.Set(1)
		} else {
			m.gauge.Set(0)
		}

		var rep *Report
		switch {
		case err != nil:
			rep = &Report{Instance: m.instance, Down: true, Since: now.Sub(began)}
		case telling:
			rep = &Report{Instance: m.instance, Since: now.Sub(began), Back: now.Sub(back)}
		}
		if rep != nil {
			rctx, cancel := context.WithTimeout(ctx, m.Timeout)
			rerr := m.reporter.Report(rctx, *rep)
			cancel()
			switch {
			case rerr != nil && !reportFailing:
				slog.Error("MySQL outage not recorded yet: Redis does not answer; retrying", "err", rerr)
			case rerr == nil && !rep.Down:
				telling = false
			}
			reportFailing = rerr != nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(m.Period):
		}
	}
}
