package outage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reporter records what a process saw of MySQL (Record).
type Reporter interface {
	Report(ctx context.Context, rep Report) error
}

var _ Reporter = (*Record)(nil)

// Monitor turns one process's view of MySQL into reports to the shared record. It
// observes the result of every probe of MySQL (the process's health check,
// internal/health, pings it every second and waits a second at most): MySQL is down
// from a probe that gets no answer, up again at the first that does. An outage is
// reported as beginning at the last answer before it, renewed at every probe while it
// lasts, and as ending at the first answer after it; an outage the process could not
// report (Redis unreachable too) is reported once Redis answers.
type Monitor struct {
	reporter Reporter
	instance string
	gauge    prometheus.Gauge
	// OnUp, when set, runs each time MySQL answers again after an outage.
	OnUp func()

	// What the probes saw, kept by Observe (called from one goroutine).
	down       bool
	lastAnswer time.Time // the last probe MySQL answered
	began      time.Time // the outage under way, or the one whose end is still to be told
	back       time.Time // when the outage to be told ended
	telling    bool      // an outage's end is still to be reported
	failing    bool      // the last report failed (logged once)
}

// reportTimeout bounds one report, so a frozen Redis delays the next probe by no more.
const reportTimeout = time.Second

// NewMonitor returns the monitor of a process of kind ("api", "worker") that reports
// to reporter. MySQL counts as up until a probe says otherwise.
func NewMonitor(reporter Reporter, kind string) *Monitor {
	var b [6]byte
	_, _ = rand.Read(b[:])
	m := &Monitor{reporter: reporter, instance: kind + "-" + hex.EncodeToString(b[:]), lastAnswer: time.Now(),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "seckill_mysql_up",
			Help: "1 while MySQL answers this process's probes, 0 during an outage (recorded: pay windows do not run)."})}
	m.gauge.Set(1)
	return m
}

// Register adds the monitor's gauge to reg.
func (m *Monitor) Register(reg prometheus.Registerer) { reg.MustRegister(m.gauge) }

// Observe takes the result of one probe of MySQL (nil: it answered), sent at sent, and
// reports what changed, or renews the report of an outage under way. An answer counts
// from when its probe was sent: MySQL answered at some instant after that, so the outage
// that follows is measured from no later than its real start.
func (m *Monitor) Observe(err error, sent time.Time) {
	now := time.Now()
	switch {
	case err == nil && m.down:
		m.back, m.telling = now, true
		slog.Info("MySQL answers again", "outage", now.Sub(m.began).Round(time.Millisecond))
		if m.OnUp != nil {
			m.OnUp()
		}
	case err != nil && !m.down:
		if !m.telling { // a flap before the last outage's end was told joins that outage
			m.began = m.lastAnswer
		}
		m.telling = false
		slog.Warn("MySQL does not answer: pay windows stop running until it does", "err", err)
	}
	m.down = err != nil
	if m.down {
		m.gauge.Set(0)
	} else {
		m.lastAnswer = sent
		m.gauge.Set(1)
	}

	var rep Report
	switch {
	case m.down:
		rep = Report{Instance: m.instance, Down: true, Since: now.Sub(m.began)}
	case m.telling:
		rep = Report{Instance: m.instance, Since: now.Sub(m.began), Back: now.Sub(m.back)}
	default:
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	rerr := m.reporter.Report(ctx, rep)
	switch {
	case rerr != nil && !m.failing:
		slog.Error("MySQL outage not recorded yet: Redis does not answer; retrying", "err", rerr)
	case rerr == nil && !rep.Down:
		m.telling = false
	}
	m.failing = rerr != nil
}
