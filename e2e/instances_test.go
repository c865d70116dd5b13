package e2e

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"seckill/internal/testutil"
)

type instance struct {
	ID      string             `json:"id"`
	Kind    string             `json:"kind"`
	Addr    string             `json:"addr"`
	Version string             `json:"version"`
	Figures map[string]float64 `json:"figures"`
}

// instances returns the live processes the API lists.
func instances(t *testing.T, c *client) []instance {
	t.Helper()
	r := c.must("GET", "/api/v1/admin/instances", testutil.Token(t, 1, true), nil)
	if r.Status != http.StatusOK {
		t.Fatalf("instances: %d %s", r.Status, r.Body)
	}
	var body struct{ Instances []instance }
	r.decode(t, &body)
	return body.Instances
}

// waitInstances polls until want(list) holds, and returns how long it took.
func waitInstances(t *testing.T, c *client, timeout time.Duration, what string, want func([]instance) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		list := instances(t, c)
		if want(list) {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not after %v; listed %+v", what, timeout, list)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func countKinds(list []instance) (apis, workers int) {
	for _, in := range list {
		switch in.Kind {
		case "api":
			apis++
		case "worker":
			workers++
		}
	}
	return apis, workers
}

// TestInstancesByHeartbeat: two APIs and a worker appear by their heartbeats; an API
// killed with SIGKILL disappears within 10 s, a worker stopped with SIGTERM at once.
func TestInstancesByHeartbeat(t *testing.T) {
	s := testutil.StartStack(t)
	second, url2 := s.StartAPI(t)
	c := newClient(t, s.URL)
	waitInstances(t, c, 5*time.Second, "two APIs and a worker", func(l []instance) bool {
		apis, workers := countKinds(l)
		return apis == 2 && workers == 1
	})
	for _, in := range instances(t, c) {
		if in.ID == "" || in.Version == "" || in.Figures == nil {
			t.Errorf("incomplete instance %+v", in)
		}
		if in.Kind == "api" && !strings.Contains(s.URL+" "+url2, in.Addr) {
			t.Errorf("API instance at %s, want one of %s %s", in.Addr, s.URL, url2)
		}
		if _, ok := in.Figures["queue_depth"]; in.Kind == "worker" && !ok {
			t.Errorf("worker without queue_depth: %+v", in)
		}
		if _, ok := in.Figures["purchases_per_second"]; in.Kind == "api" && !ok {
			t.Errorf("API without purchases_per_second: %+v", in)
		}
	}

	second.Signal(syscall.SIGKILL)
	took := waitInstances(t, c, 15*time.Second, "the killed API gone", func(l []instance) bool {
		apis, _ := countKinds(l)
		return apis == 1
	})
	t.Logf("an API killed with SIGKILL left the list %v later", took.Round(100*time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the killed API was listed for %v, want at most 10 s", took)
	}

	s.Worker.Signal(syscall.SIGTERM) // returns once the worker has exited
	if _, workers := countKinds(instances(t, c)); workers != 0 {
		t.Errorf("a worker shut down cleanly is still listed")
	}
}
