package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"seckill/web"
)

func newEngine() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	web.Register(r)
	r.NoRoute(func(c *gin.Context) { c.String(http.StatusNotFound, "no route") })
	return r
}

func TestRegisterServesThePages(t *testing.T) {
	r := newEngine()
	tests := []struct {
		path, contentType, contains string
		csp                         bool
	}{
		{"/", "text/html; charset=utf-8", "<title>Flash sales</title>", true},
		{"/admin", "text/html; charset=utf-8", "<title>Flash sales: admin</title>", true},
		{"/static/buyer.js", "text/javascript; charset=utf-8", "Idempotency-Key", false},
		{"/static/admin.js", "text/javascript; charset=utf-8", "/api/v1/admin/activities", false},
		{"/static/common.js", "text/javascript; charset=utf-8", "export async function api", false},
		{"/static/charts.js", "text/javascript; charset=utf-8", "export function sparkline", false},
		{"/static/vendor/uplot/uPlot.esm.js", "text/javascript; charset=utf-8", "export { uPlot as default }", false},
		{"/static/style.css", "text/css; charset=utf-8", ":focus-visible", false},
		{"/static/icon.svg", "image/svg+xml", "<svg", false},
		{"/docs", "text/html; charset=utf-8", `<redoc spec-url="/api/v1/openapi.yaml"`, true},
		{"/static/vendor/redoc/redoc.standalone.js", "text/javascript; charset=utf-8", "ReDoc", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tt.path, nil))
			if w.Code != http.StatusOK {
				t.Fatalf("status: got %d, want 200", w.Code)
			}
			if got := w.Header().Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type: got %q, want %q", got, tt.contentType)
			}
			if !strings.Contains(w.Body.String(), tt.contains) {
				t.Errorf("body does not contain %q", tt.contains)
			}
			if got := w.Header().Get("Content-Security-Policy") != ""; got != tt.csp {
				t.Errorf("has a Content-Security-Policy: got %v, want %v", got, tt.csp)
			}
			if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q, want nosniff", got)
			}

			// The same file again with its ETag: 304 and no body.
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			req.Header.Set("If-None-Match", w.Header().Get("ETag"))
			w2 := httptest.NewRecorder()
			r.ServeHTTP(w2, req)
			if w2.Code != http.StatusNotModified || w2.Body.Len() != 0 {
				t.Errorf("revalidation: got %d with %d bytes, want 304 and none", w2.Code, w2.Body.Len())
			}
		})
	}
}

// TestReferencePolicy checks that the reference's page may run Redoc's styles and search
// worker, and still loads nothing from another origin, while the other pages keep their
// stricter policy.
func TestReferencePolicy(t *testing.T) {
	r := newEngine()
	policy := func(path string) string {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Header().Get("Content-Security-Policy")
	}
	docs, buyer := policy("/docs"), policy("/")
	for _, want := range []string{"default-src 'self'", "script-src 'self';", "style-src 'self' 'unsafe-inline'",
		"worker-src 'self' blob:", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(docs, want) {
			t.Errorf("/docs policy %q lacks %q", docs, want)
		}
	}
	if strings.Contains(docs, "http") || strings.Contains(docs, "*") || strings.Contains(docs, "unsafe-eval") {
		t.Errorf("/docs policy %q allows another origin or eval", docs)
	}
	if strings.Contains(buyer, "unsafe-inline") || strings.Contains(buyer, "blob:") {
		t.Errorf("the buyer's page policy %q took the reference's exceptions", buyer)
	}
}

func TestRegisterLeavesOtherPathsToNoRoute(t *testing.T) {
	r := newEngine()
	for _, path := range []string{"/static/", "/static/missing.js", "/static/index.html", "/static/../web.go", "/nope"} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code == http.StatusOK {
			t.Errorf("GET %s: got 200, want it left to NoRoute", path)
		}
	}
}

// TestPagesCarryGroupBuy: the pages served are the ones with the group-buy controls
// (the browser test drives them).
func TestPagesCarryGroupBuy(t *testing.T) {
	r := newEngine()
	tests := []struct{ path, contains string }{
		{"/", `id="invite-form"`},
		{"/", `class="open-group-button"`},
		{"/admin", `id="f-group-size"`},
		{"/admin", `class="groups-table"`},
		{"/static/buyer.js", "/join`"},
		{"/static/buyer.js", "navigator.clipboard.writeText"},
		{"/static/admin.js", "/groups`"},
		{"/static/common.js", "export function onScreen"},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tt.path, nil))
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), tt.contains) {
			t.Errorf("GET %s: got %d, want 200 with %q", tt.path, w.Code, tt.contains)
		}
	}
}
