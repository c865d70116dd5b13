package handler_test

import (
	"fmt"
	"net/http"
	"testing"
)

// Every GET answers HEAD with the status and headers its GET has, and no body: a
// monitor or a cache that asks HEAD gets what a GET would tell it.
func TestHeadAnswersAsGet(t *testing.T) {
	s, plain, room, buyer, admin := routesStack(t)
	for _, tc := range []struct {
		name   string
		c      call
		status int
	}{
		{"liveness", call{path: "/healthz"}, 200},
		{"readiness", call{path: "/readyz"}, 200},
		{"the list", call{path: "/api/v1/activities"}, 200},
		{"a sale", call{path: fmt.Sprintf("/api/v1/activities/%d", plain)}, 200},
		{"a line's status", call{path: fmt.Sprintf("/api/v1/activities/%d/line/status", room)}, 200},
		{"no such sale", call{path: "/api/v1/activities/987654"}, 404},
		{"the buyer's orders", call{path: "/api/v1/orders", token: buyer}, 200},
		{"the buyer's orders without a token", call{path: "/api/v1/orders"}, 401},
		{"a sale's stats", call{path: fmt.Sprintf("/api/v1/admin/activities/%d/stats", plain), token: admin}, 200},
		{"the stats with a buyer's token", call{path: fmt.Sprintf("/api/v1/admin/activities/%d/stats", plain), token: buyer}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.method = http.MethodGet
			g := s.do(tc.c)
			tc.c.method = http.MethodHead
			h := s.do(tc.c)
			if g.status != tc.status || h.status != tc.status || g.body == "" || h.body != "" {
				t.Fatalf("GET %d with %d bytes, HEAD %d with %d bytes; want %d for both, and a body for GET only",
					g.status, len(g.body), h.status, len(h.body), tc.status)
			}
			for _, name := range []string{"Content-Type", "Cache-Control", "ETag"} {
				if h.header.Get(name) != g.header.Get(name) {
					t.Errorf("%s: HEAD %q, GET %q", name, h.header.Get(name), g.header.Get(name))
				}
			}
			if n := h.header.Get("Content-Length"); n != "" && n != fmt.Sprint(len(g.body)) {
				t.Errorf("HEAD's Content-Length %s, GET's body %d bytes", n, len(g.body))
			}
		})
	}

	// A shared cache revalidates with HEAD as with GET.
	path := fmt.Sprintf("/api/v1/activities/%d", plain)
	tag := s.do(call{method: http.MethodHead, path: path}).header.Get("ETag")
	if tag == "" {
		t.Fatal("HEAD of a sale: no ETag")
	}
	if a := s.do(call{method: http.MethodHead, path: path, header: map[string]string{"If-None-Match": tag}}); a.status != http.StatusNotModified {
		t.Errorf("HEAD with If-None-Match: got %d, want 304", a.status)
	}
	// HEAD of a route that serves no GET is 405, which names the methods it serves.
	a := s.do(call{method: http.MethodHead, path: fmt.Sprintf("/api/v1/orders/%s/pay", "x"), token: buyer})
	if a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != "POST" {
		t.Errorf("HEAD of the pay route: got %d, Allow %q; want 405, Allow POST", a.status, a.header.Get("Allow"))
	}
}
