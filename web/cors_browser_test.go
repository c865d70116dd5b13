package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"seckill/internal/testutil"
)

// storefront serves a shop's own page (testdata/storefront.html) on an origin of its
// own, another port than the API's, and returns that origin.
func storefront(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, "testdata/storefront.html")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestStorefrontInBrowser: a shop's page on another origin calls the API from
// chromium. From an origin SECKILL_CORS_ORIGINS lists, the page signs in with a token,
// joins a waiting-room sale's line, buys with the pass (a purchase sends Authorization,
// Content-Type, Idempotency-Key and X-Sale-Pass: a preflight first), reads the order,
// and reads the Retry-After of a 429. The same page from an origin not listed is
// blocked by the browser: its calls fail in the page, the console says CORS, and its
// purchase never reaches the API (the same request sent from outside a browser is
// taken).
func TestStorefrontInBrowser(t *testing.T) {
	listed, unlisted := storefront(t), storefront(t)
	s := testutil.StartStack(t, "SECKILL_CORS_ORIGINS="+listed, "SECKILL_RATE_USER=5")
	now := time.Now().UTC()
	var sale struct{ ID int64 }
	if st := call(t, "POST", s.URL+"/api/v1/admin/activities", testutil.Token(t, 1, true), map[string]any{
		"name": "Drop", "product_name": "Sneakers", "price_cents": 12000, "stock": 5, "per_user_limit": 1,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"waiting_room": true, "admit_per_second": 50, "pass_ttl_seconds": 120}, &sale); st != http.StatusCreated {
		t.Fatalf("create the sale: %d", st)
	}
	page := "/?" + url.Values{"api": {s.URL}, "sale": {fmt.Sprint(sale.ID)}}.Encode()
	b := startBrowser(t)

	shop := b.open(t, "storefront", 1280, 900)
	shop.do("open the storefront", chromedp.Navigate(listed+page))
	shop.do("sign in with a token",
		chromedp.SendKeys(chromedp.CSS("#token"), testutil.Token(t, 42, false)),
		chromedp.Click(chromedp.CSS("#signin button")),
	)
	shop.waitFor("signed in", `document.querySelector('#signed').textContent !== '' || document.querySelector('#error').textContent !== ''`)
	if got := shop.text("#signed"); got != "Signed in: 0 orders." {
		t.Fatalf("sign-in from %s: %q, error %q", listed, got, shop.text("#error"))
	}
	shop.do("join the line", chromedp.Click(chromedp.CSS("#join")))
	shop.waitFor("the turn", `document.querySelector('#ticket').textContent.startsWith('Admitted') || document.querySelector('#error').textContent !== ''`)
	shop.do("buy with the pass", chromedp.Click(chromedp.CSS("#buy")))
	shop.waitFor("the order created", `document.querySelector('#order').dataset.status === 'created' || document.querySelector('#error').textContent !== ''`)
	if got := shop.text("#error"); got != "" {
		t.Fatalf("the storefront on a listed origin: %s", got)
	}
	orderID := shop.eval(`document.querySelector('#order').dataset.id`)
	var order struct {
		UserID     int64 `json:"user_id"`
		ActivityID int64 `json:"activity_id"`
		Status     string
	}
	if st := call(t, "GET", s.URL+"/api/v1/orders/"+orderID, testutil.Token(t, 42, false), nil, &order); st != http.StatusOK ||
		order.UserID != 42 || order.ActivityID != sale.ID || order.Status != "created" {
		t.Errorf("the storefront's order %s from the API: %d %+v", orderID, st, order)
	}
	shop.do("read the order past the rate limit", chromedp.Click(chromedp.CSS("#probe")))
	shop.waitFor("the refusal", `document.querySelector('#limit').textContent !== '' || document.querySelector('#error').textContent !== ''`)
	got := shop.text("#limit")
	if ra, err := strconv.Atoi(shop.eval(`document.querySelector('#limit').dataset.retryAfter`)); !strings.HasPrefix(got, "Refused: rate_limited, Retry-After ") || err != nil || ra < 1 {
		t.Errorf("the page's view of a 429: %q (error %q), want the code and a Retry-After it can read", got, shop.text("#error"))
	}
	shop.screenshot("storefront-cross-origin")
	shop.checkConsole()

	// The same page on an origin the list does not name.
	elsewhere := b.open(t, "storefront-elsewhere", 1280, 900)
	var mu sync.Mutex
	var console []string
	if err := chromedp.Listen(elsewhere.ctx, func(ev any) {
		var text string
		switch ev := ev.(type) {
		case *log.EventEntryAdded:
			text = ev.Entry.Text
		case *cdpruntime.EventConsoleAPICalled:
			for _, a := range ev.Args {
				text += string(a.Value)
			}
		}
		mu.Lock()
		console = append(console, text)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	elsewhere.do("open the storefront", chromedp.Navigate(unlisted+page))
	elsewhere.do("sign in with a token",
		chromedp.SendKeys(chromedp.CSS("#token"), testutil.Token(t, 43, false)),
		chromedp.Click(chromedp.CSS("#signin button")),
	)
	elsewhere.waitFor("the sign-in's end", `document.querySelector('#signed').textContent !== '' || document.querySelector('#error').textContent !== ''`)
	if got := elsewhere.text("#error"); got != "Sign-in failed: TypeError: Failed to fetch" || elsewhere.text("#signed") != "" {
		t.Errorf("sign-in from %s (not listed): error %q, signed %q; want the browser's refusal", unlisted, got, elsewhere.text("#signed"))
	}
	// A read that needs no preflight: the answer comes, and the browser withholds it.
	if got := elsewhere.evalPromise(`fetch(api + '/api/v1/activities').then(() => 'read', (e) => e.name + ': ' + e.message)`); got != "TypeError: Failed to fetch" {
		t.Errorf("a simple read from an origin not listed: %q, want the browser's refusal", got)
	}
	// A purchase with a real pass (the buyer joined from outside the browser).
	var ticket struct{ Status, Pass string }
	lineURL := fmt.Sprintf("%s/api/v1/activities/%d/line", s.URL, sale.ID)
	call(t, "POST", lineURL, testutil.Token(t, 43, false), map[string]any{}, nil)
	for deadline := time.Now().Add(10 * time.Second); ticket.Status != "admitted" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		call(t, "GET", lineURL, testutil.Token(t, 43, false), nil, &ticket)
	}
	if ticket.Status != "admitted" {
		t.Fatalf("buyer 43's ticket: %+v", ticket)
	}
	buy := fmt.Sprintf(`(pass = %q, call('POST', '/api/v1/activities/%d/orders', { quantity: 1 }, { 'Idempotency-Key': 'elsewhere-1', 'X-Sale-Pass': pass }))
		.then((r) => 'answered ' + r.status, (e) => e.name + ': ' + e.message)`, ticket.Pass, sale.ID)
	if got := elsewhere.evalPromise(buy); got != "TypeError: Failed to fetch" {
		t.Errorf("a purchase from an origin not listed: %q, want the browser's refusal", got)
	}
	var orders struct{ Orders []struct{ ID string } }
	if st := call(t, "GET", s.URL+"/api/v1/orders", testutil.Token(t, 43, false), nil, &orders); st != http.StatusOK || len(orders.Orders) != 0 {
		t.Errorf("buyer 43's orders after the blocked purchase: %d %+v, want none (the preflight failed, the purchase was never sent)", st, orders)
	}
	elsewhere.screenshot("storefront-elsewhere-blocked")
	mu.Lock()
	blocked := 0
	for _, c := range console {
		if strings.Contains(c, "blocked by CORS policy") && strings.Contains(c, "origin '"+unlisted+"'") {
			blocked++
		}
	}
	mu.Unlock()
	if blocked < 3 {
		t.Errorf("%d of the page's messages say CORS blocked it, want 3 (sign-in, read, purchase): %q", blocked, console)
	}

	// The pass was good: the same purchase sent from outside a browser is taken.
	status, body := request(t, "POST", fmt.Sprintf("%s/api/v1/activities/%d/orders", s.URL, sale.ID), testutil.Token(t, 43, false),
		map[string]any{"quantity": 1}, map[string]string{"X-Sale-Pass": ticket.Pass, "Idempotency-Key": "elsewhere-1"})
	if status != http.StatusAccepted {
		t.Errorf("buyer 43's purchase from outside a browser: %d %s, want 202", status, body)
	}
}
