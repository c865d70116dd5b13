package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// client calls the API as a buyer or an admin would.
type client struct {
	t    testing.TB
	base string
	http *http.Client
}

func newClient(t testing.TB, base string) *client {
	return &client{t: t, base: base, http: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}}
}

type response struct {
	Status int
	Body   []byte
	Header http.Header
}

// on returns c for a goroutine other than the test's: its helpers' Fatal goes to g
// (testutil.Goroutines), which reports to the test.
func (c *client) on(g *testutil.Goroutines) *client {
	cp := *c
	cp.t = g
	return &cp
}

func (r response) errorCode() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

// decode reads the answer into v, and checks that every time in it is in the API's
// one format.
func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	testutil.CheckTimes(t, "answer", r.Body)
}

func (c *client) do(method, path, token string, body any, header ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return response{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Body: b, Header: resp.Header}, err
}

// must is do that fails the test on a transport error.
func (c *client) must(method, path, token string, body any, header ...string) response {
	c.t.Helper()
	r, err := c.do(method, path, token, body, header...)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

type activity struct {
	ID             int64  `json:"id"`
	StockTotal     int64  `json:"stock_total"`
	StockAvailable int64  `json:"stock_available"`
	PerUserLimit   int    `json:"per_user_limit"`
	Status         string `json:"status"`
	StockBuckets   int    `json:"stock_buckets"`
	// StartsAt is the start as the sale keeps it: to the millisecond.
	StartsAt time.Time `json:"starts_at"`
}

type order struct {
	ID          string `json:"id"`
	ActivityID  int64  `json:"activity_id"`
	Buyer       string `json:"buyer"`
	UserID      int64  `json:"user_id"`
	Quantity    int    `json:"quantity"`
	AmountCents int64  `json:"amount_cents"`
	Status      string `json:"status"`
	Variant     string `json:"variant"`
}

type stats struct {
	StockTotal     int64 `json:"stock_total"`
	StockAvailable int64 `json:"stock_available"`
	Sold           int64 `json:"sold"`
	OffSale        int64 `json:"off_sale"`
	Orders         struct {
		Queued, Grouping, Created, Paid, Cancelled, Failed, Refunded int64
	} `json:"orders"`
}

// createSale creates an active sale of stock units with the given limit.
func (c *client) createSale(admin string, stock int64, limit int) activity {
	c.t.Helper()
	now := time.Now().UTC()
	r := c.must("POST", "/api/v1/admin/activities", admin, map[string]any{
		"name": "e2e sale", "product_name": "widget", "price_cents": 1500, "stock": stock,
		"per_user_limit": limit, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at": now.Add(time.Hour).Format(time.RFC3339)})
	if r.Status != http.StatusCreated {
		c.t.Fatalf("create sale: %d %s", r.Status, r.Body)
	}
	var a activity
	r.decode(c.t, &a)
	return a
}

// waitDrained waits until no order of the sale is queued any more.
func (c *client) waitDrained(admin string, activityID int64, timeout time.Duration) stats {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/stats", activityID), admin, nil)
		var st stats
		if r.Status == http.StatusOK {
			r.decode(c.t, &st)
			if st.Orders.Queued == 0 {
				return st
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("queue not drained after %v: %d %s", timeout, r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stats reads a sale's stats, asking again for up to 5 s while the answer is 503 (a
// Redis that has just restarted).
func (c *client) stats(admin string, activityID int64) stats {
	c.t.Helper()
	r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/stats", activityID), admin, nil)
	for deadline := time.Now().Add(5 * time.Second); r.Status == http.StatusServiceUnavailable && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		r = c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/stats", activityID), admin, nil)
	}
	if r.Status != http.StatusOK {
		c.t.Fatalf("stats of sale %d: %d %s", activityID, r.Status, r.Body)
	}
	var st stats
	r.decode(c.t, &st)
	return st
}

// userOrders lists a user's orders, newest first.
func userOrders(t testing.TB, c *client, user int64) []order {
	t.Helper()
	r := c.must("GET", "/api/v1/orders", testutil.Token(t, user, false), nil)
	var list struct{ Orders []order }
	r.decode(t, &list)
	return list.Orders
}

// waitMetric waits until the /metrics at url (an API's MetricsURL) shows the unlabelled
// metric name at want.
func waitMetric(t testing.TB, url, name string, want float64, within time.Duration) {
	t.Helper()
	c := newClient(t, "")
	deadline := time.Now().Add(within)
	last := ""
	for {
		r := c.must("GET", url, "", nil)
		for _, line := range strings.Split(string(r.Body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				last = v
				if got, err := strconv.ParseFloat(v, 64); err == nil && got == want {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s at %s: %s = %q, want %v", url, time.Now().Format(time.TimeOnly), name, last, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
