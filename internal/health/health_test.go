package health_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"seckill/internal/config"
	"seckill/internal/health"
	"seckill/internal/testutil"
)

// readyz is the probe's answer: status and body.
func readyz(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls the probe until it answers status and body, and returns how long that
// took; it fails the test past within.
func waitFor(t *testing.T, url string, status int, body string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got, b := readyz(t, url)
		if got == status && b == body {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("after %v the probe answers %d %s, want %d %s", within, got, b, status, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A frozen Redis (SIGSTOP) is down within Every + Timeout while the probe answers at
// once; the reported server never changes the answer; Stop makes it 503 whatever the
// servers do.
func TestProbeFollowsRedis(t *testing.T) {
	srv := testutil.StartRedis(t)
	rdb := config.Config{RedisAddrs: []string{srv.Addr}}.Redis() // the service's own client settings
	defer rdb.Close()
	other := testutil.StartRedis(t)
	rdb2 := config.Config{RedisAddrs: []string{other.Addr}}.Redis()
	defer rdb2.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ping := func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
	need, report := health.Watch(ctx, "redis", ping), health.Watch(ctx, "mysql", func(ctx context.Context) error { return rdb2.Ping(ctx).Err() })
	probe := health.NewProbe([]*health.Check{need}, report)
	ts := httptest.NewServer(probe)
	defer ts.Close()
	waitFor(t, ts.URL, 200, `{"ready":true,"redis":"ok","mysql":"ok"}`, 3*time.Second)

	// The reported server frozen: still ready, and the body says it is down.
	other.Pause()
	took := waitFor(t, ts.URL, 200, `{"ready":true,"redis":"ok","mysql":"down"}`, 3*time.Second)
	t.Logf("reported server down after %v", took.Round(time.Millisecond))
	other.Resume()

	srv.Pause()
	paused := time.Now()
	slowest := time.Duration(0)
	for !(func() bool { // every answer while the state changes comes at once
		start := time.Now()
		status, _ := readyz(t, ts.URL)
		slowest = max(slowest, time.Since(start))
		return status == 503
	}()) {
		if time.Since(paused) > 3*time.Second {
			srv.Resume()
			t.Fatal("a frozen Redis still ready 3 s on")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("frozen Redis: 503 after %v; the slowest answer meanwhile took %v", time.Since(paused).Round(time.Millisecond), slowest)
	if slowest > 500*time.Millisecond {
		t.Errorf("a probe took %v while Redis was frozen: it must not wait for the server", slowest)
	}
	srv.Resume()
	took = waitFor(t, ts.URL, 200, `{"ready":true,"redis":"ok","mysql":"ok"}`, 5*time.Second)
	t.Logf("ready again %v after Redis resumed", took.Round(time.Millisecond))

	probe.Stop()
	if status, body := readyz(t, ts.URL); status != 503 || body != `{"ready":false,"redis":"ok","mysql":"ok"}` {
		t.Errorf("stopping: %d %s, want 503 with both servers ok", status, body)
	}
}

// A ping that ignores its context still marks the server down within Timeout, and the
// next ping waits for it: pings never pile up on a server that hangs.
func TestCheckBoundsAHangingPing(t *testing.T) {
	release := make(chan struct{})
	running := make(chan int, 16)
	var n int
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := health.Watch(ctx, "hangs", func(context.Context) error {
		n++ // the pings run one at a time, so no lock
		running <- n
		if n == 2 {
			<-release // the second ping hangs, its context ignored
		}
		return nil
	})
	<-running
	waitOK(t, c)
	<-running
	start := time.Now()
	for c.OK() {
		if time.Since(start) > health.Timeout+time.Second {
			t.Fatal("a hanging ping did not mark the server down")
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("down %v after the ping began to hang", time.Since(start).Round(time.Millisecond))
	// The behaviour under test: three periods in which no ping may start while one hangs.
	time.Sleep(3 * health.Every)
	if len(running) != 0 {
		t.Errorf("%d more pings started while one hung", len(running))
	}
	close(release)
	<-running
	waitOK(t, c)
}

// waitOK polls c until it says the server is up.
func waitOK(t *testing.T, c *health.Check) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !c.OK(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the check never said up")
		}
	}
}
