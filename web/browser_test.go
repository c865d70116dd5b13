package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"seckill/internal/testutil"
)

// TestPagesInBrowser runs a sale through the pages in Debian's chromium, against the
// real API and worker: the admin creates a sale (after a validation message shows
// beside its field), a buyer buys, sees the order created, pays and sees it paid,
// another buyer meets sold out, the admin adds a unit, the second buyer buys and
// cancels, and the admin ends the sale. Screenshots of every step go to the
// artifacts directory.
func TestPagesInBrowser(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_BUYER_PAYS=true") // the buyer's page pays, a simulated payment
	b := startBrowser(t)

	admin := b.open(t, "admin", 1280, 900)
	admin.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+testutil.Token(t, 1, true)))
	admin.waitFor("the create form", `!document.querySelector('#console').hidden`)
	admin.waitFor("the empty list", `document.querySelector('#sales-note').textContent.includes('No sales yet')`)
	admin.screenshot("admin-signed-in")

	// A bad price: the API's message shows beside the price field.
	admin.do("fill the sale",
		chromedp.SendKeys(chromedp.CSS("#f-name"), "Launch"),
		chromedp.SendKeys(chromedp.CSS("#f-product"), "Phone"),
		chromedp.SetValue(chromedp.CSS("#f-price"), "-1"),
		chromedp.SetValue(chromedp.CSS("#f-stock"), "1"),
		chromedp.SetValue(chromedp.CSS("#f-limit"), "1"),
		chromedp.Click(chromedp.CSS("#create-button")),
	)
	admin.waitFor("the price's validation message", `document.querySelector('#f-price-error').textContent !== ''`)
	// The API's message names the field first; its capital is the API's business.
	if got := admin.text("#f-price-error"); !strings.HasPrefix(strings.ToLower(got), "price_cents must be between 0 and") {
		t.Errorf("message beside the price: got %q, want the API's price_cents message", got)
	}
	if got := admin.eval(`document.activeElement.id + ' ' + document.querySelector('#f-price').getAttribute('aria-invalid')`); got != "f-price true" {
		t.Errorf("focus and aria-invalid after the bad price: got %q, want %q", got, "f-price true")
	}
	admin.screenshot("admin-validation")

	// Fixed, and sent with Enter from the focused field, as a keyboard user would.
	// The sale starts in a few seconds, so the buyer sees the countdown first.
	startsAt := admin.localTime(8 * time.Second)
	// Its stock in two buckets: the buyers below take units from either (docs/sales.md,
	// "Stock buckets").
	admin.do("correct the price, start in 8s, two stock buckets, and press Enter",
		chromedp.SetValue(chromedp.CSS("#f-starts"), startsAt),
		chromedp.SetValue(chromedp.CSS("#f-buckets"), "2"),
		chromedp.SetValue(chromedp.CSS("#f-price"), "499.00"),
		chromedp.Focus(chromedp.CSS("#f-price")),
		chromedp.KeyEvent("\r"),
	)
	admin.waitFor("the new sale", `document.querySelector('#sales li[data-status="upcoming"]') !== null`)
	if got := admin.text("#create-result"); !strings.Contains(got, "created with 1 unit:") {
		t.Errorf("create result: got %q, want it to say the sale was created", got)
	}
	admin.waitFor("the sale's figures", figureIs("f-available", "1"))
	if got := admin.text("#sales li .kind-text"); !strings.Contains(got, "in 2 buckets") {
		t.Errorf("the sale's card: got %q, want it to say its stock is in 2 buckets", got)
	}
	admin.screenshot("admin-sale-created")
	// The live processes: the stack's API and worker, by their heartbeats.
	admin.waitFor("the processes", `document.querySelectorAll('#instances-body tr').length === 2`)
	if got := admin.text("#instances-note"); got != "1 API instance and 1 worker alive." {
		t.Errorf("processes note: got %q", got)
	}
	if got := admin.text(`#instances-body tr[data-kind="worker"]`); !strings.Contains(got, "tasks queued") {
		t.Errorf("the worker's row %q shows no queue depth", got)
	}

	// The first buyer, on a phone-width screen, buys the only unit and pays.
	buyer := b.open(t, "buyer", 390, 844)
	buyer.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 42, false)))
	buyer.waitFor("the sale not started", `document.querySelector('#sales li[data-status="upcoming"]') !== null`)
	if got := buyer.text("#sales li .message"); !strings.HasPrefix(got, "Not started yet: the sale opens on") {
		t.Errorf("sentence before the start: got %q, want the not-started sentence", got)
	}
	if got := buyer.text("#sales li .clock"); !strings.HasPrefix(got, "Starts in ") {
		t.Errorf("countdown: got %q, want it to start with %q", got, "Starts in ")
	}
	if got := buyer.eval(`location.hash`); got != "" {
		t.Errorf("the token stayed in the address bar: hash %q", got)
	}
	buyer.screenshot("buyer-not-started-phone")
	// No reload: the page's clock opens the sale.
	buyer.waitFor("the sale on sale", `(() => { const b = document.querySelector('#sales li[data-status="active"] .buy-button'); return b !== null && !b.disabled })()`)
	if got := buyer.text("#sales li .stock-text"); got != "1 of 1 left" {
		t.Errorf("stock shown: got %q, want %q", got, "1 of 1 left")
	}
	buyer.screenshot("buyer-on-sale-phone")
	buyer.do("buy with the keyboard: Enter in the quantity field",
		chromedp.Focus(chromedp.CSS("#sales li .qty")),
		chromedp.KeyEvent("\r"),
	)
	buyer.waitFor("the order created", `document.querySelector('#orders li[data-status="created"] .pay') !== null`)
	if got := buyer.text("#orders li .pay-clock"); !strings.HasPrefix(got, "Pay within 1") {
		t.Errorf("pay window: got %q, want a countdown from 15m", got)
	}
	buyer.screenshot("buyer-created-phone")
	buyer.do("pay", chromedp.Click(chromedp.CSS(`#orders li[data-status="created"] .pay`)))
	buyer.waitFor("the order paid", `document.querySelector('#orders li[data-status="paid"]') !== null`)
	if got := buyer.text(`#orders li[data-status="paid"] .order-status`); !strings.HasPrefix(got, "Paid on") {
		t.Errorf("paid order: got %q, want it to say paid", got)
	}
	buyer.screenshot("buyer-paid-phone")

	// The second buyer meets sold out.
	// The second buyer comes without a token: the sales show, and the sign-in form
	// takes a pasted token.
	other := b.open(t, "other", 1280, 900)
	other.do("open the buyer page signed out", chromedp.Navigate(s.URL+"/"))
	other.waitFor("the sign-in form and the sale", `!document.querySelector('#signin').hidden && document.querySelector('#sales li') !== null`)
	other.screenshot("buyer-signed-out")
	other.do("sign in with a pasted token",
		chromedp.SendKeys(chromedp.CSS("#token"), testutil.Token(t, 43, false)),
		chromedp.Click(chromedp.CSS("#signin-form button")),
	)
	other.waitFor("signed in", `document.querySelector('#signin').hidden && !document.querySelector('#orders-section').hidden`)
	other.waitFor("the sale sold out", `document.querySelector('#sales li[data-status="sold_out"]') !== null`)
	if got := other.text("#sales li .message"); got != "Sold out: every unit has been taken." {
		t.Errorf("second buyer's sentence: got %q, want the sold-out sentence", got)
	}
	if got := other.eval(`String(document.querySelector('#sales li .buy-button').disabled)`); got != "true" {
		t.Errorf("Buy enabled on a sold-out sale")
	}
	other.screenshot("buyer-sold-out")

	admin.waitFor("the figures after the payment",
		figureIs("f-available", "0")+" && "+figureIs("f-sold", "1")+" && "+figureIs("f-paid", "1")+" && "+figureIs("f-queued", "0"))
	admin.screenshot("admin-figures")
	admin.fitsPhone(t)
	admin.screenshot("admin-figures-phone")
	admin.do("widen the admin page", chromedp.EmulateViewport(1280, 900))

	// The admin adds a unit: the second buyer buys it and cancels, and the first buyer
	// is at the per-user limit.
	admin.do("add a unit",
		chromedp.SetValue(chromedp.CSS("#sales li .stock-input"), "1"),
		chromedp.Click(chromedp.CSS("#sales li .add-stock button")),
	)
	admin.waitFor("the added unit", figureIs("f-available", "1")+" && "+figureIs("f-total", "2"))
	buyer.waitFor("the limit sentence", `document.querySelector('#sales li .message').textContent.startsWith('Limit reached')`)
	other.waitFor("the sale on sale again", `(() => { const b = document.querySelector('#sales li[data-status="active"] .buy-button'); return b !== null && !b.disabled })()`)
	other.do("buy", chromedp.Click(chromedp.CSS("#sales li .buy-button")))
	other.waitFor("the order created", `document.querySelector('#orders li[data-status="created"] .cancel') !== null`)
	other.do("cancel", chromedp.Click(chromedp.CSS(`#orders li[data-status="created"] .cancel`)))
	other.waitFor("the order cancelled", `document.querySelector('#orders li[data-status="cancelled"]') !== null`)
	other.waitFor("the unit back in stock", `document.querySelector('#sales li .stock-text').textContent === '1 of 2 left'`)
	other.screenshot("buyer-cancelled")

	// The admin ends the sale; the buyer sees it ended.
	admin.do("end the sale",
		chromedp.Click(chromedp.CSS("#sales li .end-button")),
		chromedp.Click(chromedp.CSS("#sales li .end-yes")),
	)
	admin.waitFor("the sale ended", `document.querySelector('#sales li[data-status="ended"]') !== null`)
	admin.waitFor("the figures after the cancel", figureIs("f-cancelled", "1")+" && "+figureIs("f-paid", "1"))
	other.waitFor("the buyer told it ended", `document.querySelector('#sales li .message').textContent === 'This sale has ended.'`)
	other.screenshot("buyer-ended")
	admin.screenshot("admin-ended")

	for _, tb := range []*tab{admin, buyer, other} {
		tb.checkConsole()
	}
}

// figureIs is a JavaScript test that the first sale's figure (its dd class) reads want.
func figureIs(class, want string) string {
	return fmt.Sprintf(`document.querySelector('#sales li .%s')?.textContent === %s`, class, strconv.Quote(want))
}

// browser is one chromium process for a test.
type browser struct {
	ctx context.Context
	dir string // where screenshots go
}

// chromiumPath is the browser the tests drive: $SECKILL_CHROMIUM, else Debian's
// chromium. A missing browser fails the test: a setup without it must not pass.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SECKILL_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is missing (%v): run `make services`, which installs Debian's chromium, or `apt-get install chromium`", err)
	}
	return p
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser, on ctx itself: a derived context that
	// ends would end the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{ctx: ctx, dir: screenshotDir(t)}
}

// screenshotDir is $SECKILL_ARTIFACTS/screenshots, else artifacts/screenshots at the
// repository's root.
func screenshotDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("SECKILL_ARTIFACTS")
	if root == "" {
		_, file, _, _ := runtime.Caller(0)
		root = filepath.Join(filepath.Dir(file), "..", "artifacts")
	}
	dir := filepath.Join(root, "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("screenshot directory: %v", err)
	}
	return dir
}

// tab is one person's tab, in a browser context of its own (its own storage).
type tab struct {
	t    *testing.T
	name string
	ctx  context.Context
	dir  string

	mu       sync.Mutex
	problems []string
}

func (b *browser) open(t *testing.T, name string, width, height int64) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tb := &tab{t: t, name: name, ctx: ctx, dir: b.dir}
	if err := chromedp.Listen(ctx, tb.record); err != nil {
		t.Fatalf("%s: listen: %v", name, err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("%s: enable the log: %v", name, err)
	}
	tb.do("set the viewport", chromedp.EmulateViewport(width, height))
	return tb
}

// record keeps the page's uncaught exceptions, console errors and log errors (a
// refused script, a failed load), which checkConsole reports.
func (tb *tab) record(ev any) {
	var problem string
	switch ev := ev.(type) {
	case *cdpruntime.EventExceptionThrown:
		problem = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			problem += " " + ev.ExceptionDetails.Exception.Description
		}
	case *cdpruntime.EventConsoleAPICalled:
		if ev.Type == cdpruntime.ConsoleAPICalledTypeError {
			problem = "console.error"
			for _, a := range ev.Args {
				problem += " " + string(a.Value) + a.Description
			}
		}
	case *log.EventEntryAdded:
		// The API's refusals (a 400, a 409) are answers the pages show, not faults.
		apiAnswer := ev.Entry.Source == log.EntrySourceNetwork && strings.Contains(ev.Entry.URL, "/api/v1/")
		if ev.Entry.Level == log.EntryLevelError && !apiAnswer {
			problem = "log: " + ev.Entry.Text + " " + ev.Entry.URL
		}
	}
	if problem != "" {
		tb.mu.Lock()
		tb.problems = append(tb.problems, problem)
		tb.mu.Unlock()
	}
}

func (tb *tab) checkConsole() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, p := range tb.problems {
		tb.t.Errorf("%s page: %s", tb.name, p)
	}
}

// do runs steps, failing the test with what when one fails.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.fail("%s: %v", what, err)
	}
}

// waitFor waits until the JavaScript expression is true.
// fitsPhone narrows the page to a phone's 390 px and checks that it does not scroll
// sideways once its charts have followed: they resize on a ResizeObserver, after the
// layout, so a page measured at once read 1136 px now and then on a busy machine (its
// screenshot a moment later 390 wide). A page still wider after 5 s fails.
func (tb *tab) fitsPhone(t *testing.T) {
	t.Helper()
	tb.do("narrow the page to a phone's", chromedp.EmulateViewport(390, 844))
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = tb.eval(`String(document.documentElement.scrollWidth)`); atoi(t, got) <= 390 {
			return
		}
	}
	t.Errorf("the page is %s px wide on a 390 px screen 5 s after narrowing: it scrolls sideways", got)
}

func (tb *tab) waitFor(what, expr string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second)))
	if err != nil {
		tb.fail("wait for %s: %v", what, err)
	}
}

// text returns the text of the first element that matches the CSS selector.
func (tb *tab) text(selector string) string {
	tb.t.Helper()
	return tb.eval(fmt.Sprintf(`document.querySelector(%s)?.textContent ?? '(no element)'`, strconv.Quote(selector)))
}

// eval returns the string the expression gives.
func (tb *tab) eval(expr string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		tb.fail("evaluate %s: %v", expr, err)
	}
	return strings.TrimSpace(got)
}

// localTime is the page's local time d from now, as a datetime-local field holds it:
// to the second, without ":00" when the seconds are zero, since the field reads back
// that shorter form and chromedp.SetValue fails when the value read back differs.
func (tb *tab) localTime(d time.Duration) string {
	tb.t.Helper()
	return tb.eval(fmt.Sprintf(`(() => {
		const d = new Date(Date.now() + %d), two = (n) => String(n).padStart(2, '0');
		return d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + 'T' +
			two(d.getHours()) + ':' + two(d.getMinutes()) + (d.getSeconds() ? ':' + two(d.getSeconds()) : '');
	})()`, d.Milliseconds()))
}

// screenshot writes the whole page as <dir>/<name>.png.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.fail("screenshot %s: %v", name, err)
	}
	path := filepath.Join(tb.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatalf("write %s: %v", path, err)
	}
	tb.t.Logf("screenshot %s", path)
}

// fail ends the test with a screenshot of the tab and the page's text, so a
// failure in CI can be read without a browser.
func (tb *tab) fail(format string, args ...any) {
	tb.t.Helper()
	msg := fmt.Sprintf(format, args...)
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		path := filepath.Join(tb.dir, "failed-"+tb.name+".png")
		if os.WriteFile(path, png, 0o644) == nil {
			msg += "\nscreenshot: " + path
		}
	}
	if body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err == nil {
		msg += "\n--- " + tb.name + " page text ---\n" + body
	}
	tb.mu.Lock()
	for _, p := range tb.problems {
		msg += "\n" + tb.name + " page: " + p
	}
	tb.mu.Unlock()
	tb.t.Fatalf("%s: %s", tb.name, msg)
}

// TestBuyerPageOrder: the buyer sees the sales on now first, then the upcoming ones
// with their countdown, then the ended ones, whatever order they were created in.
func TestBuyerPageOrder(t *testing.T) {
	s := testutil.StartStack(t)
	now := time.Now().UTC()
	for _, sale := range []struct {
		name         string
		starts, ends time.Time
	}{
		{"Ended", now.Add(-2 * time.Hour), now.Add(-time.Hour)},
		{"Later", now.Add(2 * time.Hour), now.Add(3 * time.Hour)},
		{"Soon", now.Add(time.Hour), now.Add(3 * time.Hour)},
		{"Now", now.Add(-time.Minute), now.Add(time.Hour)},
	} {
		body, _ := json.Marshal(map[string]any{"name": sale.name, "product_name": "p", "price_cents": 100,
			"stock": 5, "per_user_limit": 1, "starts_at": sale.starts.Format(time.RFC3339), "ends_at": sale.ends.Format(time.RFC3339)})
		req, _ := http.NewRequest("POST", s.URL+"/api/v1/admin/activities", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testutil.Token(t, 1, true))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %v %v", sale.name, err, resp)
		}
		resp.Body.Close()
	}
	b := startBrowser(t)
	buyer := b.open(t, "buyer-order", 1280, 900)
	buyer.do("open the buyer page", chromedp.Navigate(s.URL+"/"))
	buyer.waitFor("four sales", `document.querySelectorAll('#sales li').length === 4`)
	got := buyer.eval(`[...document.querySelectorAll('#sales li .sale-name')].map((n) => n.textContent).join(' ')`)
	if got != "Now Soon Later Ended" {
		t.Errorf("sales in the order %q, want %q", got, "Now Soon Later Ended")
	}
	if clock := buyer.text(`#sales li[data-status="upcoming"] .clock`); !strings.HasPrefix(clock, "Starts in ") {
		t.Errorf("the first upcoming sale shows %q, want a countdown", clock)
	}
	buyer.screenshot("buyer-sales-order")
}

// TestAdminChartsMove: during a crowd on two APIs the admin's charts draw and move:
// the sale's chart gains points and its sold line rises, the answers chart shows
// purchases per second from the APIs' heartbeats, the sale's answers chart shows its
// own answers by outcome (202, 409 sold out, 409 over the limit, 429) summed over both
// APIs, every process's row draws its heartbeat figures over time (requests/s on both
// APIs, orders written/s on the worker), and the sale's time to sell out appears.
func TestAdminChartsMove(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_RATE_USER=2") // bursts of 4 per buyer: the eager ones meet 429
	_, url2 := s.StartAPI(t)
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{"name": "Crowd", "product_name": "p", "price_cents": 100,
		"stock": 120, "per_user_limit": 1, "starts_at": now.Add(-time.Second).Format(time.RFC3339),
		"ends_at": now.Add(time.Hour).Format(time.RFC3339)})
	post := func(base, path, token string, body []byte) int {
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("POST %s: %v", path, err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(s.URL, "/api/v1/admin/activities", testutil.Token(t, 1, true), body); code != http.StatusCreated {
		t.Fatalf("create the sale: %d", code)
	}
	b := startBrowser(t)
	admin := b.open(t, "admin-charts", 1280, 1000)
	admin.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+testutil.Token(t, 1, true)))
	admin.waitFor("the sale's chart drawn", `(() => { const c = document.querySelector('#sales .sale-chart');
		return c !== null && c.querySelector('canvas') !== null && Number(c.dataset.points) >= 1 })()`)
	admin.waitFor("the sale's answers chart drawn", `(() => { const c = document.querySelector('#sales .sale-answers-chart');
		return c.querySelector('canvas') !== null && Number(c.dataset.points) >= 1 })()`)
	admin.waitFor("a sparkline in each process's row", `(() => { const rows = document.querySelectorAll('#instances-body tr');
		return rows.length === 3 && [...rows].every((r) => r.querySelector('.sparkline canvas') !== null && Number(r.querySelector('.sparkline').dataset.points) >= 1) })()`)
	before := admin.eval(`document.querySelector('#sales .sale-chart').dataset.points`)
	answersBefore := admin.eval(`document.querySelector('#sales .sale-answers-chart').dataset.points`)
	sparkBefore := admin.eval(`[...document.querySelectorAll('#instances-body .sparkline')].map((c) => c.dataset.points).join(' ')`)

	// A crowd of 160 buyers over about 8 s, one unit each, for 120 units, spread over
	// the two APIs; every eighth buyer tries five more times at once (over the
	// per-user limit, then over the rate limit).
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for u := range 160 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				base, token := s.URL, testutil.Token(t, int64(100+u), false)
				if u%2 == 1 {
					base = url2
				}
				tries := 1
				if u%8 == 0 {
					tries = 6
				}
				for range tries {
					post(base, "/api/v1/activities/1/orders", token, []byte(`{"quantity":1}`))
				}
			}()
			// A buyer comes every 50 ms, so the charts see purchases over seconds: the crowd the
			// page is tested under.
			time.Sleep(50 * time.Millisecond)
		}
		wg.Wait()
	}()
	admin.waitFor("purchases per second on the answers chart", `(() => { const c = document.querySelector('#answers-chart');
		return c.querySelector('canvas') !== null && Number((c.dataset.last || '0').split(' ')[0]) > 0 })()`)
	admin.waitFor("purchases per second on the sale's chart", `Number((document.querySelector('#sales .sale-chart').dataset.last || '').split(' ')[2]) > 0`)
	admin.waitFor("202 per second on the sale's answers chart", `Number((document.querySelector('#sales .sale-answers-chart').dataset.last || '').split(' ')[0]) > 0`)
	admin.waitFor("requests per second in both APIs' rows", `[...document.querySelectorAll('#instances-body tr[data-kind="api"] .sparkline')]
		.filter((c) => Number((c.dataset.last || '').split(' ')[0]) > 0).length === 2`)
	admin.screenshot("admin-charts-crowd")
	<-done
	admin.waitFor("the sale sold out on its chart", `(document.querySelector('#sales .sale-chart').dataset.last || '').split(' ')[0] === '0'`)
	admin.waitFor("the time to sell out", `document.querySelector('#sales .sellout').textContent.startsWith('Sold out ')`)
	// The highest points drawn: 202, 409 sold out, 409 limit, 409 other, 429, 503.
	admin.waitFor("sold out, over the limit and 429 on the sale's answers chart", `(() => {
		const max = (document.querySelector('#sales .sale-answers-chart').dataset.max || '').split(' ').map(Number);
		return max[0] > 0 && max[1] > 0 && max[2] > 0 && max[4] > 0 })()`)
	admin.waitFor("orders written per second in the worker's row", `Number((document.querySelector('#instances-body tr[data-kind="worker"] .sparkline').dataset.max || '').split(' ')[0]) > 0`)
	after := admin.eval(`document.querySelector('#sales .sale-chart').dataset.points`)
	if a, b := atoi(t, after), atoi(t, before); a < b+3 {
		t.Errorf("the sale's chart has %d points after the crowd, %d before: it did not move", a, b)
	}
	answersAfter := admin.eval(`document.querySelector('#sales .sale-answers-chart').dataset.points`)
	if a, b := atoi(t, answersAfter), atoi(t, answersBefore); a < b+3 {
		t.Errorf("the sale's answers chart has %d points after the crowd, %d before: it did not move", a, b)
	}
	sparkAfter := admin.eval(`[...document.querySelectorAll('#instances-body .sparkline')].map((c) => c.dataset.points).join(' ')`)
	for i, a := range strings.Fields(sparkAfter) {
		if b := strings.Fields(sparkBefore); i < len(b) && atoi(t, a) < atoi(t, b[i])+3 {
			t.Errorf("process row %d's sparkline has %s points after the crowd, %s before: it did not move", i+1, a, b[i])
		}
	}
	if got := admin.eval(`document.querySelector('#instances-body tr[data-kind="api"] .sparkline').getAttribute('aria-label')`); !strings.HasPrefix(got, "API 127.0.0.1:") || !strings.Contains(got, "requests/s") {
		t.Errorf("an API's sparkline is named %q, want its address and requests/s", got)
	}
	admin.screenshot("admin-charts-sold-out")
	admin.do("rebuild the sale from MySQL", chromedp.Click(chromedp.CSS(`#sales .rebuild-button`)))
	admin.waitFor("the rebuild's answer", `document.querySelector('#sales li > .message').textContent.startsWith('Redis holds the sale: 0 of 120 available')`)
	admin.checkConsole()
}

// atoi reads a number the page shows; anything else fails the test.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("the page shows %q, want a number", s)
	}
	return n
}

// TestGroupBuyInBrowser runs a group-buy sale through the pages: the admin creates it
// from the form (after the API's message beside the group size), buyer A opens a
// group and copies its share link, B (on a phone) and C open the link and join, the
// group fills and A's page shows it complete with the order payable without a reload,
// a buyer whose page had not seen the group fill is told it is full, and the admin's
// card lists the group complete with its members.
func TestGroupBuyInBrowser(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_BUYER_PAYS=true") // the buyer's page pays, a simulated payment
	b := startBrowser(t)

	admin := b.open(t, "admin-group", 1280, 900)
	admin.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+testutil.Token(t, 1, true)))
	admin.waitFor("the create form", `!document.querySelector('#console').hidden`)
	if got := admin.eval(`String(document.querySelector('#f-group-size').closest('.field').hidden)`); got != "true" {
		t.Errorf("the group size shows for a plain sale (hidden %s)", got)
	}
	admin.do("choose a group-buy with the keyboard and fill it, with a group of one",
		chromedp.SendKeys(chromedp.CSS("#f-kind"), "g"),
		chromedp.SendKeys(chromedp.CSS("#f-name"), "Team tea"),
		chromedp.SendKeys(chromedp.CSS("#f-product"), "Tea box"),
		chromedp.SetValue(chromedp.CSS("#f-price"), "12.50"),
		chromedp.SetValue(chromedp.CSS("#f-stock"), "30"),
		chromedp.SetValue(chromedp.CSS("#f-limit"), "2"),
		chromedp.SetValue(chromedp.CSS("#f-participations"), "1"),
	)
	admin.waitFor("the group fields", `!document.querySelector('#f-group-size').closest('.field').hidden`)
	admin.do("a group of one",
		chromedp.SetValue(chromedp.CSS("#f-group-size"), "1"),
		chromedp.SetValue(chromedp.CSS("#f-group-window"), "600"),
		chromedp.Click(chromedp.CSS("#create-button")),
	)
	admin.waitFor("the group size's validation message", `document.querySelector('#f-group-size-error').textContent !== ''`)
	if got := admin.text("#f-group-size-error"); !strings.HasPrefix(got, "group_size must be between 2 and 100") {
		t.Errorf("message beside the group size: got %q, want the API's group_size message", got)
	}
	if got := admin.eval(`document.activeElement.id + ' ' + document.querySelector('#f-group-size').getAttribute('aria-invalid')`); got != "f-group-size true" {
		t.Errorf("focus and aria-invalid after the bad group size: got %q, want %q", got, "f-group-size true")
	}
	admin.screenshot("admin-group-validation")
	admin.do("a group of three, sent with Enter",
		chromedp.SetValue(chromedp.CSS("#f-group-size"), "3"),
		chromedp.Focus(chromedp.CSS("#f-group-size")),
		chromedp.KeyEvent("\r"),
	)
	admin.waitFor("the new group sale", `document.querySelector('#sales li[data-status="active"]') !== null`)
	if got := admin.text("#create-result"); !strings.Contains(got, "created with 30 units in groups of 3 (each has 10m 00s to fill)") {
		t.Errorf("create result: got %q, want it to name the groups", got)
	}
	if got := admin.text("#sales li .kind-text"); got != "Group-buy: groups of 3, each with 10m 00s to fill from its first seat. At most 1 participation per buyer." {
		t.Errorf("the sale's kind: got %q", got)
	}

	// Buyer A opens a group.
	a := b.open(t, "buyer-a", 1280, 900)
	a.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 42, false)))
	a.waitFor("Open a group", `(() => { const b = document.querySelector('#sales li .open-group-button'); return b !== null && !b.hidden && !b.disabled })()`)
	if got := a.eval(`String(document.querySelector('#sales li .buy-button').hidden)`); got != "true" {
		t.Errorf("Buy shows on a group-buy sale")
	}
	a.waitFor("no open group yet", `document.querySelector('#sales li .open-groups-note').textContent === 'No group is open right now: open the first one.'`)
	if got := a.text("#sales li .group-rule"); !strings.HasPrefix(got, "Group-buy: 3 buyers per group.") {
		t.Errorf("the group rule: got %q", got)
	}
	a.screenshot("buyer-group-sale")
	a.do("open a group", chromedp.Click(chromedp.CSS("#sales li .open-group-button")))
	a.waitFor("the order in its open group", `document.querySelector('#orders li[data-group="open"] .share-url') !== null`)
	if got := a.text("#sales li .message"); !strings.HasPrefix(got, "You opened a group: 1 of 3 joined.") {
		t.Errorf("after opening: got %q", got)
	}
	if got := a.text("#orders li .group-state"); got != "Group: 1 of 3 joined, 2 seats left. Share the link so that it fills." {
		t.Errorf("A's group: got %q", got)
	}
	if got := a.text("#orders li .group-clock"); !strings.HasPrefix(got, "It closes in 9m") && !strings.HasPrefix(got, "It closes in 10m") {
		t.Errorf("A's group countdown: got %q", got)
	}
	// The sale lists A's group as A's, and A has used the one participation allowed.
	a.waitFor("A's group in the sale's list", `document.querySelector('#sales li .group-item[data-mine="true"] .group-yours') !== null`)
	a.waitFor("the participation used", `document.querySelector('#sales li .open-group-button').disabled`)
	if got := a.text("#sales li .limit-text"); got != "Up to 2 per buyer, in at most 1 group at once. You have 1, in 1 group." {
		t.Errorf("A's allowance: got %q", got)
	}
	a.waitFor("the order waiting for its group", `document.querySelector('#orders li[data-status="grouping"]') !== null`)
	if got := a.text(`#orders li .order-badge`); got != "Waiting for group" {
		t.Errorf("A's order badge: got %q", got)
	}

	// The share link, copied to the clipboard.
	shareURL := a.eval(`document.querySelector('#orders li .share-url').value`)
	if !strings.HasPrefix(shareURL, s.URL+"/?group=") {
		t.Fatalf("share link %q, want %s/?group=<id>", shareURL, s.URL)
	}
	groupID := strings.TrimPrefix(shareURL, s.URL+"/?group=")
	a.allowClipboard(s.URL)
	a.do("copy the link", chromedp.Click(chromedp.CSS("#orders li .copy")))
	a.waitFor("the link copied", `document.querySelector('#orders li .share-result').textContent.startsWith('Link copied.')`)
	if got := a.evalPromise(`navigator.clipboard.readText()`); got != shareURL {
		t.Errorf("clipboard: got %q, want %q", got, shareURL)
	}
	a.screenshot("buyer-group-opened")

	// B opens the link on a phone and joins.
	bb := b.open(t, "buyer-b", 390, 844)
	bb.do("open the share link", chromedp.Navigate(shareURL+"#token="+testutil.Token(t, 43, false)))
	bb.waitFor("the invitation", `document.querySelector('#invite').dataset.members === '1' && !document.querySelector('#invite-join').disabled`)
	if got := bb.text("#invite-state"); got != "1 of 3 joined: 2 seats left." {
		t.Errorf("B's invitation: got %q", got)
	}
	if got := bb.text("#invite-sale"); got != "Team tea: Tea box at 12.50 each, in groups of 3." {
		t.Errorf("B's invitation names %q", got)
	}
	if got := bb.eval(`location.search + ' ' + location.hash`); got != "?group="+groupID {
		t.Errorf("B's address: got %q, want the group kept and the token gone", got)
	}
	bb.screenshot("buyer-group-invite-phone")
	bb.do("join", chromedp.Click(chromedp.CSS("#invite-join")))
	bb.waitFor("B in the group", `document.querySelector('#invite').dataset.mine === 'true' && document.querySelector('#invite').dataset.members === '2'`)
	if got := bb.text("#invite-state"); got != "You are in this group: 2 of 3 joined, 1 seat left. Share the link so that it fills." {
		t.Errorf("B after joining: got %q", got)
	}
	if got := bb.text("#invite-message"); !strings.HasPrefix(got, "You joined the group: 2 of 3.") {
		t.Errorf("B's join message: got %q", got)
	}
	bb.waitFor("B's order in the group", `document.querySelector('#orders li[data-group="open"]') !== null`)
	if got := bb.eval(`String(document.documentElement.scrollWidth)`); atoi(t, got) > 390 {
		t.Errorf("the buyer page is %s px wide on a 390 px screen: it scrolls sideways", got)
	}
	bb.screenshot("buyer-group-joined-phone")
	a.waitFor("A sees B join without a reload", `document.querySelector('#orders li .group-state').textContent.startsWith('Group: 2 of 3 joined')`)

	// D opens the link too, but its page does not hear of the group again (its reads
	// of the group are blocked, as on a stalled connection) until it tries to join.
	d := b.open(t, "buyer-d", 1280, 900)
	d.do("open the share link", chromedp.Navigate(shareURL+"#token="+testutil.Token(t, 45, false)))
	d.waitFor("the invitation", `document.querySelector('#invite').dataset.members === '2' && !document.querySelector('#invite-join').disabled`)
	d.blockURL(s.URL + "/api/v1/groups/" + groupID)

	// C fills the group.
	c := b.open(t, "buyer-c", 1280, 900)
	c.do("open the share link", chromedp.Navigate(shareURL+"#token="+testutil.TokenOf(t, "auth0|64f1c2", false))) // a subject of an identity provider
	c.waitFor("the invitation", `document.querySelector('#invite').dataset.members === '2' && !document.querySelector('#invite-join').disabled`)
	c.do("join", chromedp.Click(chromedp.CSS("#invite-join")))
	c.waitFor("C's join", `document.querySelector('#invite-message').textContent !== ''`)
	if got := c.text("#invite-message"); !strings.HasPrefix(got, "You joined and filled the group: 3 of 3.") {
		t.Errorf("C's join message: got %q", got)
	}
	c.waitFor("C's order payable", `document.querySelector('#orders li[data-group="complete"][data-status="created"] .pay') !== null`)
	if got := c.text("#invite-state"); got != "This group is complete: 3 of 3 joined. Your order is now payable: pay it under Your orders." {
		t.Errorf("C's group: got %q", got)
	}

	// D's page still offers the seat: the API answers group_full, which D reads as words.
	d.do("join the full group", chromedp.Click(chromedp.CSS("#invite-join")))
	d.waitFor("D's refusal", `document.querySelector('#invite-message').textContent !== ''`)
	if got := d.text("#invite-message"); got != "This group is full: every seat was taken just before you. Join another group or open your own." {
		t.Errorf("D's refusal: got %q, want the group_full sentence", got)
	}
	d.screenshot("buyer-group-full")
	d.unblockURLs()
	d.waitFor("the group full on D's page", `document.querySelector('#invite').dataset.status === 'complete'`)
	if got := d.text("#invite-state"); got != "This group is full: all 3 seats are taken. Open your own group in the sale below." {
		t.Errorf("D's invitation after: got %q", got)
	}
	if got := d.eval(`String(document.querySelector('#invite-form').hidden)`); got != "true" {
		t.Errorf("D can still try to join a full group")
	}

	// A sees the group complete and the order payable without a reload, and pays.
	a.waitFor("A's group complete and the order payable", `document.querySelector('#orders li[data-group="complete"][data-status="created"] .pay') !== null`)
	if got := a.text("#orders li .group-state"); got != "Group complete: 3 of 3 joined. Your order is now payable." {
		t.Errorf("A's group: got %q", got)
	}
	if got := a.text("#orders li .pay-clock"); !strings.HasPrefix(got, "Pay within 1") {
		t.Errorf("A's pay window: got %q, want a countdown from 15m", got)
	}
	a.screenshot("buyer-group-complete")
	a.do("pay", chromedp.Click(chromedp.CSS(`#orders li[data-status="created"] .pay`)))
	a.waitFor("A's order paid", `document.querySelector('#orders li[data-status="paid"]') !== null`)

	// The admin's card lists the group complete with its members.
	admin.do("scroll to the sale's groups", chromedp.ScrollIntoView(chromedp.CSS("#sales li .groups-admin")))
	admin.waitFor("the group complete", fmt.Sprintf(`document.querySelector('#sales li .groups-table tr[data-group-id=%q][data-status="complete"]') !== null`, groupID))
	row := fmt.Sprintf(`#sales li .groups-table tr[data-group-id=%q]`, groupID)
	if got := admin.eval(`[...document.querySelector(` + strconv.Quote(row) + `).cells].map((c) => c.textContent).join(' | ')`); got != groupID+" | Complete | 3 of 3 | 42, 43, auth0|64f1c2 | Filled" {
		t.Errorf("the admin's row: got %q", got)
	}
	if got := admin.text("#sales li .groups-note"); got != "1 group: 0 open, 1 complete, 0 failed." {
		t.Errorf("the admin's groups note: got %q", got)
	}
	admin.waitFor("the figures", figureIs("f-grouping", "0")+" && "+figureIs("f-paid", "1")+" && "+figureIs("f-created", "2"))
	admin.screenshot("admin-groups")

	// A group that does not fill: E opens one, F joins it from the sale's list of open
	// groups, and its window passes. The contract's shortest window is a minute; Redis
	// decides when a group's window ends, so the test shortens the sale's there (as the
	// e2e tests do) before E opens it.
	saleID := admin.eval(`document.querySelector('#sales li').dataset.activityId`)
	if err := s.Redis.Client(t).HSet(context.Background(), "seckill:{act:"+saleID+"}:sale", "gwin", 8).Err(); err != nil {
		t.Fatal(err)
	}
	e := b.open(t, "buyer-e", 1280, 900)
	e.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 46, false)))
	e.waitFor("Open a group", `(() => { const b = document.querySelector('#sales li .open-group-button'); return b !== null && !b.disabled })()`)
	e.do("open a group", chromedp.Click(chromedp.CSS("#sales li .open-group-button")))
	e.waitFor("E's group", `document.querySelector('#orders li[data-group="open"]') !== null`)
	f := b.open(t, "buyer-f", 1280, 900)
	f.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 47, false)))
	f.waitFor("E's group in the list", `(() => { const j = document.querySelector('#sales li .group-item[data-members="1"] .join-button'); return j !== null && !j.hidden && !j.disabled })()`)
	if got := f.text("#sales li .group-item .group-seats"); got != "1 of 3 joined: 2 seats left" {
		t.Errorf("the listed group: got %q", got)
	}
	f.do("join from the list", chromedp.Click(chromedp.CSS("#sales li .group-item .join-button")))
	f.waitFor("F's seat", `document.querySelector('#orders li[data-group="open"]') !== null`)
	if got := f.text("#sales li .message"); !strings.HasPrefix(got, "You joined the group: 2 of 3.") {
		t.Errorf("F's join message: got %q", got)
	}
	if got := f.eval(`document.activeElement.className`); got != "order-title" {
		t.Errorf("focus after joining from the list: got %q, want the order's title", got)
	}
	f.waitFor("F's group marked as F's", `document.querySelector('#sales li .group-item[data-mine="true"]') !== null`)
	f.screenshot("buyer-group-joined-from-list")
	e.waitFor("E's group failed and the order cancelled", `document.querySelector('#orders li[data-status="cancelled"]') !== null &&
		document.querySelector('#orders li .group-state').textContent === 'The group did not fill in time: 2 of 3 joined.'`)
	if got := e.text("#orders li .order-status"); got != "Cancelled: the group did not fill in time. The units went back to stock; nothing is owed." {
		t.Errorf("E's order: got %q", got)
	}
	if got := e.eval(`String(document.querySelector('#orders li .actions').hidden)`); got != "true" {
		t.Errorf("E can pay or cancel a cancelled order")
	}
	e.screenshot("buyer-group-failed")
	admin.waitFor("the failed group", `document.querySelector('#sales li .groups-table tr[data-status="failed"]') !== null`)
	if got := admin.eval(`[...document.querySelector('#sales li .groups-table tr[data-status="failed"]').cells].slice(1, 4).map((c) => c.textContent).join(' | ')`); got != "Failed | 2 of 3 | 46, 47" {
		t.Errorf("the admin's failed row: got %q", got)
	}
	if got := admin.eval(`[...document.querySelectorAll('#sales li .groups-table tbody tr')].map((r) => r.dataset.status).join(' ')`); got != "failed complete" {
		t.Errorf("the admin's groups, newest first: got %q", got)
	}
	admin.screenshot("admin-groups-failed")

	for _, tb := range []*tab{admin, a, bb, c, d, e, f} {
		tb.checkConsole()
	}
}

// allowClipboard lets the tab's pages on origin read and write the clipboard.
func (tb *tab) allowClipboard(origin string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true},
			Setting:    cdpbrowser.PermissionSettingGranted, Origin: origin,
			BrowserContextID: chromedp.FromContext(tb.ctx).BrowserContextID})
		if err != nil {
			tb.fail("grant %s: %v", name, err)
		}
	}
}

// evalPromise returns the string the promise of the expression resolves to.
func (tb *tab) evalPromise(expr string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.fail("evaluate %s: %v", expr, err)
	}
	return got
}

// blockURL makes the tab's requests to exactly url fail, as a stalled connection would.
func (tb *tab) blockURL(url string) {
	tb.t.Helper()
	tb.setBlocked([]*network.BlockPattern{{URLPattern: url, Block: true}})
}

func (tb *tab) unblockURLs() {
	tb.t.Helper()
	tb.setBlocked(nil)
}

func (tb *tab) setBlocked(patterns []*network.BlockPattern) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns}); err != nil {
		tb.fail("block URLs: %v", err)
	}
}

// TestAdminShowsAnArchivedSale watches a sale end and be archived from the admin page:
// its card, charted while the sale ran, says it is archived, with its figures from
// MySQL, no chart and none of the actions the API would refuse.
func TestAdminShowsAnArchivedSale(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_SALE_RETENTION=1s")
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{"name": "Weekly drop", "product_name": "p", "price_cents": 100,
		"stock": 7, "per_user_limit": 1, "starts_at": now.Add(-time.Minute).Format(time.RFC3339Nano),
		"ends_at": now.Add(4 * time.Second).Format(time.RFC3339Nano)})
	req, _ := http.NewRequest("POST", s.URL+"/api/v1/admin/activities", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testutil.Token(t, 1, true))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the sale: %d", resp.StatusCode)
	}
	b := startBrowser(t)
	admin := b.open(t, "admin-archived", 1280, 1000)
	admin.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+testutil.Token(t, 1, true)))
	admin.waitFor("the live sale's chart drawn", `(() => { const c = document.querySelector('#sales .sale-chart');
		return c !== null && c.querySelector('canvas') !== null })()`)
	admin.waitFor("the sale archived on its card", `(() => { const n = document.querySelector('#sales .archived-note');
		return n !== null && !n.hidden && n.textContent.startsWith('Archived ') })()`)
	for what, js := range map[string]string{
		"the badge":          `document.querySelector('#sales .sale-status').textContent`,
		"units available":    `document.querySelector('#sales .f-available').textContent`,
		"the actions hidden": `String(document.querySelector('#sales .controls').hidden)`,
		"the charts hidden":  `String([...document.querySelectorAll('#sales .chart-figure')].every((f) => f.hidden && f.querySelector('canvas') === null))`,
	} {
		want := map[string]string{"the badge": "Archived", "units available": "7", "the actions hidden": "true",
			"the charts hidden": "true"}[what]
		if got := admin.eval(js); got != want {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	admin.screenshot("admin-archived")
	admin.checkConsole()
}
