package web_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testutil"
)

// TestWaitingRoomInBrowser runs a sale with a waiting room and the proof-of-work on,
// through the buyer's page in chromium against the real API and worker. Two buyers
// (a phone and a desktop) join before the start: the vendored ALTCHA widget fetches a
// real challenge from the API and solves it in a Web Worker, with its progress shown;
// the solution the page sent is replayed by another user and refused. Before the start
// the ticket counts down to the lottery; after it the line admits both (1 unit: two
// passes outstanding at most), the phone reads "your turn: buy within m:ss" and buys
// with its pass, a buyer who joined after the start waits third in line, and the sale
// selling out turns the waiting ticket and the other admitted buyer's to sold out. A
// waiting page polls the line's public status and reads its ticket once, when admitted.
func TestWaitingRoomInBrowser(t *testing.T) {
	s := testutil.StartStack(t)
	startsAt := time.Now().UTC().Add(30 * time.Second).Truncate(time.Second) // time to start chromium and join on a busy machine
	status, body := postJSON(t, s.URL+"/api/v1/admin/activities", testutil.Token(t, 1, true), map[string]any{
		"name": "Drop", "product_name": "Sneakers", "price_cents": 12000, "stock": 1, "per_user_limit": 1,
		"starts_at": startsAt.Format(time.RFC3339), "ends_at": startsAt.Add(time.Hour).Format(time.RFC3339),
		"waiting_room": true, "admit_per_second": 1, "pass_ttl_seconds": 120, "challenge": true})
	if status != http.StatusCreated {
		t.Fatalf("create the sale: %d %s", status, body)
	}
	var sale struct {
		ID            int64 `json:"id"`
		ChallengeCost int   `json:"challenge_cost"`
	}
	if err := json.Unmarshal(body, &sale); err != nil {
		t.Fatal(err)
	}

	b := startBrowser(t)
	phone := b.open(t, "line-phone", 390, 844)
	desk := b.open(t, "line-desktop", 1280, 900)
	var sent []string // what each page POSTed to join, in the order of the tabs
	for i, tb := range []*tab{phone, desk} {
		tb.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, int64(42+i), false)))
		tb.waitFor("Join the line", `(() => { const j = document.querySelector('#sales li .join-line'); return j !== null && !j.hidden && !j.disabled })()`)
		if got := tb.eval(`String(document.querySelector('#sales li .buy').hidden)`); got != "true" {
			t.Errorf("%s: Buy shows before the line admitted the buyer", tb.name)
		}
		if got := tb.text("#sales li .line-rule"); !strings.HasPrefix(got, "Waiting room: join the line to buy. Everyone who joins before the start is placed by a lottery") {
			t.Errorf("%s: the room's rule: got %q", tb.name, got)
		}
		// The page's own fetch is watched: what it POSTs to the line, and whether the
		// widget's progress was on screen while it solved.
		tb.eval(`(() => {
			window.lineBodies = [];
			window.reads = { ticket: 0, status: 0 };
			const f = window.fetch;
			window.fetch = (url, opts) => {
				const u = String(url), method = (opts && opts.method) || 'GET';
				if (u.endsWith('/line') && method === 'POST') window.lineBodies.push(opts.body);
				if (u.endsWith('/line') && method === 'GET') window.reads.ticket++;
				if (u.endsWith('/line/status')) window.reads.status++;
				return f(url, opts);
			};
			window.progressSeen = '';
			const box = document.querySelector('#sales li .challenge');
			new MutationObserver(() => {
				if (!box.hidden && box.querySelector('altcha-widget')) window.progressSeen = box.querySelector('.challenge-progress').textContent;
			}).observe(box, { attributes: true, childList: true, subtree: true });
			return '';
		})()`)
		tb.do("join the line", chromedp.Click(chromedp.CSS("#sales li .join-line")))
		tb.waitFor("the ticket", `document.querySelector('#sales li').dataset.line === 'waiting'`)
		tb.eval(`(() => { window.reads = { ticket: 0, status: 0 }; return ''; })()`) // from the join on
		if got := tb.eval(`window.progressSeen`); !strings.HasPrefix(got, "Proving you are not a bot: your device is solving a small puzzle") {
			t.Errorf("%s: the progress while solving: got %q", tb.name, got)
		}
		if got := tb.text("#sales li .line-state"); !strings.HasPrefix(got, "You are in the line. The lottery in 0:") ||
			!strings.Contains(got, "places everyone who joined before the start in a random order") || !strings.HasSuffix(got, "1 unit for sale.") {
			t.Errorf("%s: the ticket before the start: got %q", tb.name, got)
		}
		sent = append(sent, tb.eval(`window.lineBodies.join('\n')`))
	}
	phone.screenshot("buyer-line-lottery-phone")
	desk.screenshot("buyer-line-lottery")

	// Each page sent one solution, which the widget made for a challenge of the sale's
	// cost; sent again, by another buyer, it is refused.
	for i, body := range sent {
		var join struct {
			Altcha string `json:"altcha"`
		}
		if strings.Contains(body, "\n") || json.Unmarshal([]byte(body), &join) != nil || join.Altcha == "" {
			t.Fatalf("tab %d sent %q, want one join with a solution", i, body)
		}
		raw, err := base64.StdEncoding.DecodeString(join.Altcha)
		if err != nil {
			t.Fatalf("tab %d: the solution is not base64: %v", i, err)
		}
		var sol struct {
			Algorithm string `json:"algorithm"`
			Number    int    `json:"number"`
			Took      int    `json:"took"`
		}
		if err := json.Unmarshal(raw, &sol); err != nil || sol.Algorithm != "SHA-256" || sol.Number < 0 || sol.Number > sale.ChallengeCost {
			t.Errorf("tab %d: solution %s (%v), want SHA-256 with a number in 0..%d", i, raw, err, sale.ChallengeCost)
		}
		t.Logf("tab %d: the widget found %d (cost %d) in %d ms", i, sol.Number, sale.ChallengeCost, sol.Took)
		status, answer := postJSON(t, fmt.Sprintf("%s/api/v1/activities/%d/line", s.URL, sale.ID), testutil.Token(t, 50, false), join)
		if status != http.StatusForbidden || !strings.Contains(string(answer), `"challenge_failed"`) {
			t.Errorf("tab %d's solution replayed by another buyer: %d %s, want 403 challenge_failed", i, status, answer)
		}
	}

	// The start, the behaviour under test: the line admits both (one unit: at most two
	// passes outstanding). The wait for it begins at the start: a waitFor gives up after
	// 25 s, and on a quiet machine the set-up leaves more than that before the start.
	time.Sleep(time.Until(startsAt))
	// While waiting, a page polls the line's public status, never its ticket.
	for _, tb := range []*tab{phone, desk} {
		if got := tb.eval(`JSON.stringify(window.reads)`); !strings.HasPrefix(got, `{"ticket":0,"status":`) || strings.HasSuffix(got, `"status":0}`) {
			t.Errorf("%s: reads while waiting %s, want the status polled and no ticket read", tb.name, got)
		}
	}
	for _, tb := range []*tab{phone, desk} {
		tb.waitFor("the turn", `document.querySelector('#sales li').dataset.line === 'admitted'`)
		// Admitted: the status reached its place, and it read its ticket once, for the pass.
		if got := tb.eval(`String(window.reads.ticket)`); got != "1" {
			t.Errorf("%s: %s ticket reads from the join to the turn, want 1", tb.name, got)
		}
		if got := tb.text("#sales li .line-state"); !strings.HasPrefix(got, "Your turn: buy within 1:") && got != "Your turn: buy within 2:00." {
			t.Errorf("%s: the admitted ticket: got %q, want a countdown from 2:00", tb.name, got)
		}
	}
	phone.waitFor("Buy", `(() => { const b = document.querySelector('#sales li .buy-button'); return !document.querySelector('#sales li .buy').hidden && !b.disabled })()`)
	phone.screenshot("buyer-line-your-turn-phone")

	// A buyer who joins after the start waits behind them: the sale has no third pass.
	late := b.open(t, "line-late", 1280, 900)
	late.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 44, false)))
	late.waitFor("Join the line", `(() => { const j = document.querySelector('#sales li .join-line'); return j !== null && !j.hidden && !j.disabled })()`)
	late.do("join the line", chromedp.Click(chromedp.CSS("#sales li .join-line")))
	late.waitFor("the ticket", `document.querySelector('#sales li').dataset.line === 'waiting'`)
	if got := late.text("#sales li .line-state"); !strings.HasPrefix(got, "You are number 3 in line, nobody is ahead of you, 1 unit left.") {
		t.Errorf("the late buyer's ticket: got %q", got)
	}
	late.screenshot("buyer-line-waiting")

	// The phone buys with its pass; the sale sells out and every other ticket says so.
	phone.do("buy", chromedp.Click(chromedp.CSS("#sales li .buy-button")))
	phone.waitFor("the order created", `document.querySelector('#orders li[data-status="created"]') !== null`)
	phone.screenshot("buyer-line-bought-phone")
	for _, tb := range []*tab{late, desk} {
		tb.waitFor("sold out", `document.querySelector('#sales li .line-state').textContent === 'Sold out: every unit has been taken. The line is closed.'`)
		if got := tb.eval(`String(document.querySelector('#sales li .buy').hidden || document.querySelector('#sales li .buy-button').disabled)`); got != "true" {
			t.Errorf("%s: Buy is offered on a sold-out sale", tb.name)
		}
	}
	if got := late.eval(`document.querySelector('#sales li').dataset.line`); got != "sold_out" {
		t.Errorf("the waiting ticket's status: got %q, want sold_out", got)
	}
	late.screenshot("buyer-line-sold-out")
	if got := phone.eval(`String(document.documentElement.scrollWidth)`); atoi(t, got) > 390 {
		t.Errorf("the buyer page is %s px wide on a 390 px screen: it scrolls sideways", got)
	}
	for _, tb := range []*tab{phone, desk, late} {
		tb.checkConsole()
	}
}

// postJSON POSTs body as JSON with the token and returns the status and the answer.
func postJSON(t *testing.T, url, token string, body any) (int, []byte) {
	t.Helper()
	return request(t, "POST", url, token, body, nil)
}

// TestAdminWaitingRoomInBrowser: the admin creates a sale with a waiting room through
// the form (a rate of 0 first: the API's message shows beside the field), 40 buyers
// join its line over the API, and the sale's card shows the line at work: in line,
// joined, admitted, admitted per second, passes outstanding, used and expired, and the
// live chart; three admitted buyers buy with their passes; the rate is changed from
// the card.
func TestAdminWaitingRoomInBrowser(t *testing.T) {
	s := testutil.StartStack(t)
	b := startBrowser(t)
	admin := b.open(t, "admin-line", 1280, 900)
	admin.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+testutil.Token(t, 1, true)))
	admin.waitFor("the create form", `!document.querySelector('#console').hidden`)
	if got := admin.eval(`String(document.querySelector('#f-admit').closest('.field').hidden)`); got != "true" {
		t.Errorf("the room's fields show before the room is ticked (hidden %s)", got)
	}
	admin.do("fill a sale with a waiting room",
		chromedp.SendKeys(chromedp.CSS("#f-name"), "Drop"),
		chromedp.SendKeys(chromedp.CSS("#f-product"), "Sneakers"),
		chromedp.SetValue(chromedp.CSS("#f-price"), "120.00"),
		chromedp.SetValue(chromedp.CSS("#f-stock"), "10"),
		chromedp.SetValue(chromedp.CSS("#f-limit"), "1"),
		chromedp.Click(chromedp.CSS("#f-room")),
	)
	admin.waitFor("the room's fields", `!document.querySelector('#f-admit').closest('.field').hidden`)
	admin.do("a rate of 0", chromedp.SetValue(chromedp.CSS("#f-admit"), "0"), chromedp.Click(chromedp.CSS("#create-button")))
	admin.waitFor("the rate's validation message", `document.querySelector('#f-admit-error').textContent !== ''`)
	if got := admin.text("#f-admit-error"); !strings.HasPrefix(strings.ToLower(got), "admit_per_second must be between 1 and 100000") {
		t.Errorf("message beside the rate: got %q", got)
	}
	admin.screenshot("admin-line-validation")
	admin.do("a rate of 4, passes of 30 s",
		chromedp.SetValue(chromedp.CSS("#f-admit"), "4"),
		chromedp.SetValue(chromedp.CSS("#f-pass-ttl"), "30"),
		chromedp.Click(chromedp.CSS("#create-button")),
	)
	admin.waitFor("the sale's waiting room", `(() => { const l = document.querySelector('#sales li[data-status="active"] .line-admin'); return l !== null && !l.hidden })()`)
	if got := admin.text("#sales li .room-text"); !strings.HasPrefix(got, "Waiting room: admits 4 per second in line order, a pass lasts 30s") {
		t.Errorf("the room's settings: got %q", got)
	}
	id := admin.eval(`document.querySelector('#sales li').dataset.activityId`)

	// 40 buyers join; the sale has 10 units, so at most max(4, 2 x 10) = 20 passes are
	// outstanding and the other 20 wait.
	lineURL := s.URL + "/api/v1/activities/" + id + "/line"
	for u := int64(100); u < 140; u++ {
		if status, body := postJSON(t, lineURL, testutil.Token(t, u, false), map[string]any{}); status != http.StatusCreated {
			t.Fatalf("buyer %d joins: %d %s", u, status, body)
		}
	}
	admin.waitFor("20 passes outstanding", figureIs("f-line-outstanding", "20")+" && "+figureIs("f-line-waiting", "20"))
	if got := admin.text("#sales li .f-line-joined"); got != "40" {
		t.Errorf("joined: got %q, want 40", got)
	}
	// Three admitted buyers buy with their passes.
	bought := 0
	for u := int64(100); u < 140 && bought < 3; u++ {
		var ticket struct {
			Status string `json:"status"`
			Pass   string `json:"pass"`
		}
		status, body := request(t, "GET", lineURL, testutil.Token(t, u, false), nil, nil)
		if status != http.StatusOK || json.Unmarshal(body, &ticket) != nil {
			t.Fatalf("buyer %d's ticket: %d %s", u, status, body)
		}
		if ticket.Status != "admitted" {
			continue
		}
		status, body = request(t, "POST", s.URL+"/api/v1/activities/"+id+"/orders", testutil.Token(t, u, false),
			map[string]any{"quantity": 1}, map[string]string{"X-Sale-Pass": ticket.Pass, "Idempotency-Key": fmt.Sprint("buy-", u)})
		if status != http.StatusAccepted {
			t.Fatalf("buyer %d buys with the pass: %d %s", u, status, body)
		}
		bought++
	}
	admin.waitFor("the passes used", figureIs("f-line-used", "3"))
	admin.waitFor("the chart's points", `Number(document.querySelector('#sales li .line-chart').dataset.points) >= 3`)
	if got := admin.text("#sales li .f-line-rate"); got == "…" || got == "" {
		t.Errorf("admitted per second: got %q, want a figure", got)
	}
	if max := strings.Fields(admin.eval(`document.querySelector('#sales li .line-chart').dataset.max`)); len(max) != 4 || max[2] != "20" {
		t.Errorf("the chart's maxima (in line, admitted/s, outstanding, used): got %v, want outstanding 20", max)
	}
	admin.do("scroll to the waiting room", chromedp.ScrollIntoView(chromedp.CSS("#sales li .line-admin")))
	admin.screenshot("admin-line")

	admin.do("admit 8 per second", // typed, as a person would: the page's reads keep it
		chromedp.Focus(chromedp.CSS("#sales li .room-rate")),
		chromedp.SetValue(chromedp.CSS("#sales li .room-rate"), ""),
		chromedp.SendKeys(chromedp.CSS("#sales li .room-rate"), "8"),
		chromedp.Click(chromedp.CSS("#sales li .room-form button")),
	)
	admin.waitFor("the new rate", `document.querySelector('#sales li > .message').textContent.startsWith('Saved. Waiting room: admits 8 per second')`)
	admin.checkConsole()
}

// request sends body (JSON, unless nil) with the token and headers, and returns the
// status and the answer.
func request(t *testing.T, method, url, token string, body any, headers map[string]string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, url, r)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, answer
}
