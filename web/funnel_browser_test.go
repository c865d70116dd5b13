package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testutil"
)

// TestAdminFunnel: the admin shows a sale's funnel on its card, bars from the purchases
// answered to the payments and the refusals by why, live while the sale runs; once the
// sale is archived the same figures come from MySQL.
func TestAdminFunnel(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_SALE_RETENTION=1s")
	now := time.Now().UTC()
	admin := testutil.Token(t, 1, true)
	call := func(method, path, token string, body any) int {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := call("POST", "/api/v1/admin/activities", admin, map[string]any{"name": "Funnel drop", "product_name": "p",
		"price_cents": 100, "stock": 3, "per_user_limit": 1, "pay_window_seconds": 10, "starts_at": now.Add(-time.Minute).Format(time.RFC3339Nano),
		"ends_at": now.Add(8 * time.Second).Format(time.RFC3339Nano)}); st != http.StatusCreated {
		t.Fatalf("create the sale: %d", st)
	}
	answers := map[int]int{}
	for u := int64(2); u <= 6; u++ { // three take the units, two find them gone
		answers[call("POST", "/api/v1/activities/1/orders", testutil.Token(t, u, false), map[string]int{"quantity": 1})]++
	}
	if answers[http.StatusAccepted] != 3 || answers[http.StatusConflict] != 2 {
		t.Fatalf("purchases answered %v, want three 202 and two 409", answers)
	}
	b := startBrowser(t)
	page := b.open(t, "admin-funnel", 1280, 1400)
	page.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+admin))
	page.waitFor("the sale's card", `document.querySelector('#sales .funnel-show') !== null`)
	page.do("show the funnel", chromedp.Click(chromedp.CSS("#sales .funnel-show")))
	bar := func(label string) string {
		return fmt.Sprintf(`(() => { const li = [...document.querySelectorAll('#sales .funnel-chart li')]
			.find((l) => l.querySelector('.bar-label').textContent === %q); return li ? li.dataset.value : '' })()`, label)
	}
	page.waitFor("the refusals flushed and read again (5 s)", bar("Purchases answered")+` === '5'`)
	for label, want := range map[string]string{"Purchases taken": "3", "Orders paid": "0"} {
		if got := page.eval(bar(label)); got != want {
			t.Errorf("bar %q: %s, want %s", label, got, want)
		}
	}
	if got := page.eval(`[...document.querySelectorAll('#sales .funnel-figures div')]
		.find((d) => d.querySelector('dt').textContent === 'Refused: sold out').querySelector('dd').textContent`); got != "2" {
		t.Errorf("refused as sold out: %q, want 2", got)
	}
	page.screenshot("admin-funnel")
	page.waitFor("the sale archived on its card", `(() => { const n = document.querySelector('#sales .archived-note');
		return n !== null && !n.hidden && n.textContent.startsWith('Archived ') })()`)
	page.do("read the archived funnel", chromedp.Click(chromedp.CSS("#sales .funnel-show")),
		chromedp.Click(chromedp.CSS("#sales .funnel-show")))
	page.waitFor("the archived funnel from MySQL", `document.querySelector('#sales .funnel-note').textContent.includes('archived')`)
	if got := page.eval(bar("Purchases answered")); got != "5" {
		t.Errorf("the archived funnel's purchases answered: %s, want 5", got)
	}
	page.checkConsole()
}
