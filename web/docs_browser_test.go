package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/gin-gonic/gin"

	"seckill/api"
	"seckill/internal/handler"
	"seckill/internal/handler/handlertest"
)

// TestReferenceInBrowser opens the API reference (/docs) in chromium, served by the real
// router: Redoc, vendored, renders GET /api/v1/openapi.yaml under the page's policy
// (nothing from elsewhere, no console error), and lists every route the router serves
// with its method.
func TestReferenceInBrowser(t *testing.T) {
	routes := handler.New(handlertest.Services(handlertest.Unserved{}), handler.Options{JWTSecret: strings.Repeat("r", 32)}).Routes()
	srv := httptest.NewServer(routes)
	t.Cleanup(srv.Close)

	res, err := http.Get(srv.URL + "/api/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/yaml") ||
		string(body) != string(api.OpenAPI) {
		t.Fatalf("GET /api/v1/openapi.yaml: %d %q, %d bytes; want 200 application/yaml and the committed document",
			res.StatusCode, res.Header.Get("Content-Type"), len(body))
	}

	// Every API route of the router, as the document writes it (GET /api/v1/orders/{id}).
	engine := routes.(*gin.Engine)
	param := regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)
	var want []string
	for _, r := range engine.Routes() {
		if r.Method == http.MethodHead || !strings.HasPrefix(r.Path, "/api/") && !slices.Contains([]string{"/healthz", "/readyz", "/metrics"}, r.Path) {
			continue // the pages and their files are HTML, not API
		}
		want = append(want, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	if len(want) < 25 {
		t.Fatalf("the router lists only %d API routes: %v", len(want), want)
	}

	b := startBrowser(t)
	page := b.open(t, "reference", 1280, 900)
	page.do("open the reference", chromedp.Navigate(srv.URL+"/docs"))
	page.waitFor("Redoc to render every operation",
		`document.querySelectorAll('[data-section-id^="operation/"]').length >= `+strconv.Itoa(len(want)))
	// Each operation's section names its method and path in the endpoint box.
	var listed []string
	if err := json.Unmarshal([]byte(page.eval(`JSON.stringify([...document.querySelectorAll('[data-section-id^="operation/"]')].map(s => {
		const verb = s.querySelector('[class*="http-verb"]')?.textContent ?? '';
		const path = [...s.querySelectorAll('span')].map(e => e.textContent).find(x => x.startsWith('/')) ?? '';
		return verb.toUpperCase() + ' ' + path;
	}))`)), &listed); err != nil {
		t.Fatalf("read the rendered operations: %v", err)
	}
	for _, r := range want {
		if !slices.Contains(listed, r) {
			t.Errorf("the reference does not list %s; it lists %d operations: %v", r, len(listed), listed)
		}
	}
	if title := page.eval(`document.querySelector('h1')?.textContent ?? ''`); !strings.Contains(title, "Seckill flash-sale API") {
		t.Errorf("the reference's title: %q", title)
	}
	page.screenshot("reference")
	// Redoc's sidebar credits Redocly with an image from its CDN, which no option turns
	// off; the page's policy blocks it (the image then hides itself). That refusal is
	// expected; any other problem fails the test.
	page.mu.Lock()
	page.problems = slices.DeleteFunc(page.problems, func(p string) bool {
		return strings.Contains(p, "'https://cdn.redoc.ly/redoc/logo-mini.svg' violates") &&
			strings.Contains(p, "has been blocked")
	})
	page.mu.Unlock()
	page.checkConsole()
}
