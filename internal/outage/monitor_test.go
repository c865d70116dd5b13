package outage_test

import (
	"context"
	"testing"
	"time"

	"seckill/internal/config"
	"seckill/internal/health"
	"seckill/internal/outage"
	"seckill/internal/testutil"
)

// monitored starts n processes' health checks of a private MariaDB, each with its
// monitor reporting to a record on a private Redis, and stops them at the end of the
// test.
func monitored(t *testing.T, n int) (*testutil.MariaDBServer, *testutil.RedisServer, *outage.Record, []*health.Check) {
	t.Helper()
	db, redis := testutil.StartMariaDB(t), testutil.StartRedis(t)
	dsn := testutil.MySQLOn(t, db.DSN).DSN
	rec := outage.NewRecord(config.Config{RedisAddrs: []string{redis.Addr}}.Redis())
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	var checks []*health.Check
	for range n {
		conn, err := config.Config{MySQLDSN: dsn}.MySQLProbe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		checks = append(checks, health.Watch(ctx, "mysql", conn.PingContext, outage.NewMonitor(rec, "test").Observe))
	}
	return db, redis, rec, checks
}

// waitUp waits until every check says up is MySQL's state.
func waitUp(t *testing.T, ms []*health.Check, up bool, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, m := range ms {
		for m.OK() != up {
			if time.Now().After(deadline) {
				t.Fatalf("a monitor still says up=%t after %v", !up, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// checkCovers fails unless the record holds one outage, closed, that covers the freeze
// from frozen to resumed (taken just before MySQL is resumed) and exceeds it by no more
// than its error bound: before, a probe's pause and wait; after, a probe's pause.
func checkCovers(t *testing.T, rec *outage.Record, frozen, resumed time.Time) {
	t.Helper()
	got, err := rec.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spans) != 1 || got.Open {
		t.Fatalf("outages %+v, want one that ended", got)
	}
	s := got.Spans[0]
	slack := 500 * time.Millisecond // a loaded machine's scheduling
	t.Logf("froze %v .. %v; recorded %v before .. %v after", frozen.Format(time.TimeOnly), resumed.Format(time.TimeOnly),
		frozen.Sub(s.From).Round(time.Millisecond), s.To.Sub(resumed).Round(time.Millisecond))
	// A SIGSTOP takes effect a moment after it is sent: MySQL may answer a ping sent
	// just after the test's frozen.
	if s.From.After(frozen.Add(100*time.Millisecond)) || s.From.Before(frozen.Add(-health.Every-health.Timeout-slack)) {
		t.Errorf("the outage begins %v before the freeze, want 0 .. %v", frozen.Sub(s.From), health.Every+health.Timeout)
	}
	// The record keeps milliseconds: its end is cut to one.
	if s.To.Before(resumed.Truncate(time.Millisecond)) || s.To.After(resumed.Add(health.Every+health.Timeout+slack)) {
		t.Errorf("the outage ends %v after MySQL resumed, want 0 .. %v", s.To.Sub(resumed), health.Every+health.Timeout)
	}
}

// MariaDB frozen (SIGSTOP) for 4 s: two processes' checks say MySQL is down within a
// probe's pause and wait, the record their monitors feed shows an outage going on
// before the freeze ends, and once MySQL is up again it holds one outage that covers
// the freeze.
func TestMonitorRecordsAFreeze(t *testing.T) {
	const freeze = 4 * time.Second
	db, _, rec, ms := monitored(t, 2)
	waitUp(t, ms, true, 5*time.Second)
	// A second of probes answered before the freeze: the record dates an outage from the last
	// one.
	time.Sleep(time.Second)
	db.Pause()
	frozen := time.Now()
	defer db.Resume()
	waitUp(t, ms, false, health.Every+health.Timeout+2*time.Second)
	// A check says down when its probe times out; its monitor reports once the probe
	// has returned, a moment later.
	for {
		got, err := rec.Read(context.Background())
		if err == nil && got.Open {
			break
		}
		if time.Since(frozen) > freeze {
			t.Fatalf("during the %v freeze: outages %+v (err %v), want one going on", freeze, got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The freeze lasts its length: the behaviour under test.
	time.Sleep(freeze - time.Since(frozen))
	resumed := time.Now() // before SIGCONT: MySQL cannot answer earlier
	db.Resume()
	waitUp(t, ms, true, 10*time.Second)
	waitClosed(t, rec, 10*time.Second) // the end reported
	checkCovers(t, rec, frozen, resumed)
}

// waitClosed polls the record until it holds an outage that has ended.
func waitClosed(t *testing.T, rec *outage.Record, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, err := rec.Read(context.Background())
		if err == nil && len(got.Spans) > 0 && !got.Open {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no outage ended in the record %v on: %+v, %v", within, got, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// MySQL and Redis both frozen, MySQL back first: the outage could not be reported while
// it lasted, and is recorded once Redis answers.
func TestMonitorTellsAnOutageOnceRedisAnswers(t *testing.T) {
	db, redis, rec, ms := monitored(t, 1)
	waitUp(t, ms, true, 5*time.Second)
	// A second of probes answered before the freeze: the record dates an outage from the last
	// one.
	time.Sleep(time.Second)
	redis.Pause()
	defer redis.Resume()
	db.Pause()
	frozen := time.Now()
	defer db.Resume()
	waitUp(t, ms, false, health.Every+health.Timeout+2*time.Second)
	// The freeze lasts 2 s, Redis frozen too: the behaviour under test.
	time.Sleep(2 * time.Second)
	resumed := time.Now() // before SIGCONT: MySQL cannot answer earlier
	db.Resume()
	waitUp(t, ms, true, 10*time.Second)
	// MySQL answers again while Redis is still frozen, for a second: the scenario under test.
	time.Sleep(time.Second)
	redis.Resume()
	waitClosed(t, rec, 10*time.Second) // the report, retried, answered
	checkCovers(t, rec, frozen, resumed)
}
