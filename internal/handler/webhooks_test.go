package handler_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"seckill/internal/handler"
	"seckill/internal/testutil"
)

// The admin's webhook routes: each bad input a 400 naming its field, private targets
// refused outside dev mode, the secret shown once, 404 for an unknown or deleted
// endpoint, and the routes closed to everyone but admins.
func TestWebhookRoutes(t *testing.T) {
	s := newStack(t, handler.Options{})
	admin, user := testutil.Token(t, 1, true), testutil.Token(t, 42, false)
	post := func(body string) answer {
		return s.do(call{method: "POST", path: "/api/v1/admin/webhooks", token: admin, body: body})
	}
	for _, tc := range []struct{ body, message string }{
		{`{}`, "url is required"},
		{`{"url": 5}`, "url must be a string"},
		{`{"url": "http://127.0.0.1:8080/hook"}`, "url must not point at a loopback or private network address; SECKILL_WEBHOOK_ALLOW_PRIVATE=true allows it."},
		{`{"url": "http://localhost/hook"}`, "loopback or private network address"},
		{`{"url": "http://10.0.0.7/hook"}`, "loopback or private network address"},
		{`{"url": "ftp://93.184.215.14/hook"}`, "url must be an absolute http or https URL"},
		{`{"url": "https://93.184.215.14/hook", "events": "order.paid"}`, "events must be"},
		{`{"url": "https://93.184.215.14/hook", "events": []}`, "events must list at least one event type"},
		{`{"url": "https://93.184.215.14/hook", "events": ["order.shipped"]}`, `events has \"order.shipped\"`},
		{`[1]`, "the body must be a JSON object"},
	} {
		a := post(tc.body)
		wantError(t, a, http.StatusBadRequest, "invalid_request")
		if !strings.Contains(a.body, tc.message) {
			t.Errorf("%s: %s, want a message with %q", tc.body, a.body, tc.message)
		}
	}

	a := post(`{"url": "https://93.184.215.14/hook", "events": ["order.paid", "order.created"], "extra": 1}`)
	var w struct {
		ID     int64    `json:"id"`
		URL    string   `json:"url"`
		Events []string `json:"events"`
		Secret string   `json:"secret"`
	}
	if err := json.Unmarshal([]byte(a.body), &w); a.status != http.StatusCreated || err != nil || w.ID == 0 ||
		!strings.HasPrefix(w.Secret, "whsec_") || strings.Join(w.Events, ",") != "order.created,order.paid" {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	list := s.do(call{method: "GET", path: "/api/v1/admin/webhooks", token: admin})
	if list.status != http.StatusOK || strings.Contains(list.body, "whsec_") || !strings.Contains(list.body, `"url":"https://93.184.215.14/hook"`) {
		t.Errorf("list: %d %s, want the endpoint without its secret", list.status, list.body)
	}
	path := "/api/v1/admin/webhooks/" + strconv.FormatInt(w.ID, 10)
	if d := s.do(call{method: "GET", path: path + "/deliveries", token: admin}); d.status != http.StatusOK || d.body != `{"deliveries":[]}` {
		t.Errorf("deliveries of a new endpoint: %d %s", d.status, d.body)
	}
	for _, c := range []call{
		{method: "GET", path: "/api/v1/admin/webhooks", token: user},
		{method: "POST", path: "/api/v1/admin/webhooks", token: user, body: `{"url": "https://93.184.215.14/hook"}`},
		{method: "DELETE", path: path, token: testutil.ServiceToken(t, 9)},
	} {
		wantError(t, s.do(c), http.StatusForbidden, "forbidden")
	}
	wantError(t, s.do(call{method: "GET", path: "/api/v1/admin/webhooks"}), http.StatusUnauthorized, "unauthorized")
	if d := s.do(call{method: "DELETE", path: path, token: admin}); d.status != http.StatusNoContent || d.body != "" {
		t.Errorf("delete: %d %q", d.status, d.body)
	}
	for _, c := range []call{
		{method: "DELETE", path: path},
		{method: "GET", path: path + "/deliveries"},
		{method: "DELETE", path: "/api/v1/admin/webhooks/999"},
		{method: "DELETE", path: "/api/v1/admin/webhooks/abc"},
		{method: "GET", path: "/api/v1/admin/webhooks/0/deliveries"},
	} {
		c.token = admin
		wantError(t, s.do(c), http.StatusNotFound, "not_found")
	}
	if list := s.do(call{method: "GET", path: "/api/v1/admin/webhooks", token: admin}); list.body != `{"webhooks":[]}` {
		t.Errorf("list after delete: %s", list.body)
	}
}
