package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// saleAnswers is one sale's answers per second in a heartbeat (Instance.sales).
type saleAnswers struct {
	ActivityID int64              `json:"activity_id"`
	PerSecond  map[string]float64 `json:"answers_per_second"`
}

// TestInstancesCountAnswersPerSale: purchases spread over two APIs are in their
// heartbeats per sale and outcome. Summed over every heartbeat (rate x the time since
// the instance's previous one) they give each sale's answers by outcome, as the
// buyers got them, seats of a group-buy sale included; a sale nobody bought from is
// never carried, nor is any sale once the purchases stop.
func TestInstancesCountAnswersPerSale(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_RATE_USER=1") // a burst of 2 per user
	_, url2 := s.StartAPI(t)
	admin := testutil.Token(t, 1, true)
	c, c2 := newClient(t, s.URL), newClient(t, url2)
	waitInstances(t, c, 5*time.Second, "two APIs", func(l []instance) bool {
		apis, _ := countKinds(l)
		return apis == 2
	})
	onSale, quiet := c.createSale(admin, 20, 1), c.createSale(admin, 5, 1)
	now := time.Now().UTC()
	r := c.must("POST", "/api/v1/admin/activities", admin, map[string]any{
		"name": "later", "product_name": "widget", "price_cents": 100, "stock": 5, "per_user_limit": 1,
		"starts_at": now.Add(time.Hour).Format(time.RFC3339), "ends_at": now.Add(2 * time.Hour).Format(time.RFC3339)})
	if r.Status != http.StatusCreated {
		t.Fatalf("create the later sale: %d %s", r.Status, r.Body)
	}
	var later activity
	r.decode(t, &later)
	grouped := createGroupSale(t, singleRedis(t, s), c, admin, 10, 1, 2, 1, time.Minute)

	// Every heartbeat from here on is read once: the list is polled ten times per
	// heartbeat interval.
	last := map[string]time.Time{}
	got := map[int64]map[string]float64{} // sale -> outcome -> answers
	read := func() (sales int) {
		resp := c.must("GET", "/api/v1/admin/instances", admin, nil)
		var body struct {
			Instances []struct {
				instance
				LastSeen time.Time     `json:"last_seen"`
				Sales    []saleAnswers `json:"sales"`
			} `json:"instances"`
		}
		resp.decode(t, &body)
		for _, in := range body.Instances {
			prev, known := last[in.ID]
			if known && !in.LastSeen.After(prev) {
				continue // the same heartbeat as before
			}
			last[in.ID] = in.LastSeen
			if in.Kind == "worker" && len(in.Sales) > 0 {
				t.Errorf("a worker's heartbeat carries sales: %+v", in.Sales)
			}
			if !known {
				if len(in.Sales) > 0 {
					t.Fatalf("sales before any purchase: %+v", in.Sales)
				}
				continue
			}
			seconds := in.LastSeen.Sub(prev).Seconds()
			for _, sa := range in.Sales {
				sales++
				if got[sa.ActivityID] == nil {
					got[sa.ActivityID] = map[string]float64{}
				}
				for outcome, perSecond := range sa.PerSecond {
					got[sa.ActivityID][outcome] += perSecond * seconds
				}
			}
		}
		return sales
	}
	read()

	buy := func(user int64, activityID int64, times int) []response {
		var out []response
		for i := range times {
			cl := c
			if (user+int64(i))%2 == 1 {
				cl = c2
			}
			r, err := cl.do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", activityID),
				testutil.Token(t, user, false), map[string]any{"quantity": 1})
			if err != nil {
				t.Errorf("user %d buys from sale %d: %v", user, activityID, err)
				continue
			}
			out = append(out, r)
		}
		return out
	}
	seat := func(cl *client, user int64, path string) []response {
		r, err := cl.do("POST", path, testutil.Token(t, user, false), map[string]any{"quantity": 1})
		if err != nil {
			t.Errorf("user %d: POST %s: %v", user, path, err)
			return nil
		}
		return []response{r}
	}
	want := map[int64]map[string]float64{onSale.ID: {}, later.ID: {}, grouped.ID: {}}
	tally := func(activityID int64, rs []response) {
		for _, r := range rs {
			key := strconv.Itoa(r.Status)
			if r.Status == http.StatusConflict {
				switch code := r.errorCode(); code {
				case "sold_out", "limit_exceeded":
					key += "_" + code
				default:
					key += "_other"
				}
			}
			want[activityID][key]++
		}
	}
	// Ten buyers, five of them twice (over the limit), twenty more for the ten units
	// left, one buyer hammering the sale that has not started (over the rate limit),
	// while the heartbeats are read.
	bought := make(chan struct{})
	go func() {
		defer close(bought)
		for u := int64(100); u < 110; u++ {
			tally(onSale.ID, buy(u, onSale.ID, 1))
		}
		for u := int64(100); u < 105; u++ {
			tally(onSale.ID, buy(u, onSale.ID, 1))
		}
		for u := int64(200); u < 220; u++ {
			tally(onSale.ID, buy(u, onSale.ID, 1))
		}
		tally(later.ID, buy(300, later.ID, 8))
		// A group of two opened on one API and filled on the other; a third buyer
		// finds it full.
		opened := seat(c, 400, fmt.Sprintf("/api/v1/activities/%d/groups", grouped.ID))
		tally(grouped.ID, opened)
		var g seatAnswer
		if len(opened) == 0 || json.Unmarshal(opened[0].Body, &g) != nil || g.Group.ID == "" {
			t.Errorf("open a group: %+v", opened)
			return
		}
		tally(grouped.ID, seat(c2, 401, "/api/v1/groups/"+g.Group.ID+"/join"))
		tally(grouped.ID, seat(c, 402, "/api/v1/groups/"+g.Group.ID+"/join"))
	}()
	// Until the purchases are done and then two heartbeats of each instance in a row
	// carry no sale.
	done, quietPolls := false, 0
	for deadline := time.Now().Add(30 * time.Second); !done || quietPolls < 20; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("heartbeats still carry sales 30 s after the purchases began; summed %v", got)
		}
		select {
		case <-bought:
			done = true
		default:
		}
		if read() > 0 || !done {
			quietPolls = 0
		} else {
			quietPolls++ // 20 polls: 4 s, two heartbeat intervals
		}
	}
	if w := want[onSale.ID]; w["202"] != 20 || w["409_limit_exceeded"] != 5 || w["409_sold_out"] != 10 {
		t.Fatalf("the buyers got %v, want 20 accepted, 5 over the limit, 10 sold out", w)
	}
	if w := want[later.ID]; w["409_other"] < 1 || w["429"] < 1 {
		t.Fatalf("the hammering buyer got %v, want some 409 sale_not_started and some 429", w)
	}
	if w := want[grouped.ID]; w["202"] != 2 || w["409_other"] != 1 {
		t.Fatalf("the group's buyers got %v, want 2 seats taken and 1 group_full", w)
	}
	if _, ok := got[quiet.ID]; ok {
		t.Errorf("the sale nobody bought from was carried: %v", got[quiet.ID])
	}
	for id, outcomes := range want {
		rounded := map[string]float64{}
		for k, v := range got[id] {
			rounded[k] = math.Round(v)
		}
		if diff := cmp.Diff(outcomes, rounded); diff != "" {
			t.Errorf("sale %d: answers summed over the heartbeats (-the buyers' +heartbeats'):\n%s", id, diff)
		}
	}
	t.Logf("summed over the heartbeats: %v", got)
}
