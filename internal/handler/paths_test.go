package handler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/internal/handler"
	"seckill/internal/testutil"
)

// Paths are canonical: an activity id is a decimal without sign or leading zero, and an
// order id is exactly as issued, letter case included; any other spelling is 404
// not_found and does nothing, where the canonical one is served.
func TestCanonicalPaths(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	act := s.sale(100, 5, now.Add(-time.Minute), now.Add(time.Hour))
	buyer, admin := testutil.Token(t, 7, false), testutil.Token(t, 1, true)
	a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", act), token: buyer, body: `{"quantity":1}`})
	if a.status != http.StatusAccepted {
		t.Fatalf("a purchase: %d %s", a.status, a.body)
	}
	var o struct{ ID string }
	if err := json.Unmarshal([]byte(a.body), &o); err != nil || o.ID == "" {
		t.Fatalf("the order: %s (%v)", a.body, err)
	}
	lower := strings.ToLower(o.ID)
	for _, tc := range []struct {
		method, path, token, body string
	}{
		{"POST", fmt.Sprintf("/api/v1/activities/+%d/orders", act), buyer, `{"quantity":1}`},
		{"POST", fmt.Sprintf("/api/v1/activities/0%d/orders", act), buyer, `{"quantity":1}`},
		{"POST", fmt.Sprintf("/api/v1/activities/%d%%20/orders", act), buyer, `{"quantity":1}`},
		{"POST", "/api/v1/activities/-1/orders", buyer, `{"quantity":1}`},
		{"POST", "/api/v1/activities/0/orders", buyer, `{"quantity":1}`},
		{"POST", "/api/v1/activities/99999999999999999999/orders", buyer, `{"quantity":1}`},
		{"POST", fmt.Sprintf("/api/v1/activities/0%d/groups", act), buyer, `{"quantity":1}`},
		{"GET", fmt.Sprintf("/api/v1/activities/0%d", act), "", ""},
		{"GET", fmt.Sprintf("/api/v1/activities/+%d", act), "", ""},
		{"GET", fmt.Sprintf("/api/v1/admin/activities/0%d/stats", act), admin, ""},
		{"PATCH", fmt.Sprintf("/api/v1/admin/activities/+%d", act), admin, `{"per_user_limit":3}`},
		{"GET", "/api/v1/orders/" + lower, buyer, ""},
		{"POST", "/api/v1/orders/" + lower + "/cancel", buyer, ""},
		{"POST", "/api/v1/orders/" + lower + "/pay", buyer, ""},
		{"GET", "/api/v1/orders/" + o.ID[:26] + "0" + o.ID[26:], buyer, ""},
	} {
		got := s.do(call{method: tc.method, path: tc.path, token: tc.token, body: tc.body})
		if got.status != http.StatusNotFound || !strings.Contains(got.body, `"code":"not_found"`) {
			t.Errorf("%s %s: %d %s, want 404 not_found", tc.method, tc.path, got.status, got.body)
		}
	}
	for _, tc := range []struct{ method, path, token string }{
		{"GET", fmt.Sprintf("/api/v1/activities/%d", act), ""},
		{"GET", "/api/v1/orders/" + o.ID, buyer},
	} {
		if got := s.do(call{method: tc.method, path: tc.path, token: tc.token}); got.status != http.StatusOK {
			t.Errorf("%s %s: %d %s, want 200", tc.method, tc.path, got.status, got.body)
		}
	}
	stats := s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/stats", act), token: admin})
	if !strings.Contains(stats.body, `"stock_available":99`) {
		t.Errorf("after one purchase and the refused spellings: %s, want 99 units left", stats.body)
	}
}
