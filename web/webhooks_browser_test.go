package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testutil"
)

// call sends a JSON request to the stack's API and decodes the answer into out.
func call(t *testing.T, method, url, token string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}

// launch creates an active sale of 5 phones at 499.00, one per buyer, through the API
// at url.
func launch(t *testing.T, url, admin string) (a struct{ ID int64 }) {
	t.Helper()
	now := time.Now().UTC()
	if st := call(t, "POST", url+"/api/v1/admin/activities", admin, map[string]any{"name": "Launch", "product_name": "Phone",
		"price_cents": 49900, "stock": 5, "per_user_limit": 1, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at": now.Add(time.Hour).Format(time.RFC3339)}, &a); st != http.StatusCreated {
		t.Fatalf("create the sale: %d", st)
	}
	return a
}

// TestWebhooksInBrowser: the admin page lists the shop's endpoints and their newest
// deliveries. A healthy endpoint shows an order's created and paid events delivered;
// one that answered 410 shows disabled, its delivery given up; on a phone the page does
// not scroll sideways.
func TestWebhooksInBrowser(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_WEBHOOK_ALLOW_PRIVATE=true")
	admin := testutil.Token(t, 1, true)
	healthy, gone := testutil.StartReceiver(t), testutil.StartReceiver(t)
	gone.Answer = func(testutil.Received, int) int { return http.StatusGone }
	for _, r := range []*testutil.Receiver{gone, healthy} {
		var w struct{ Secret string }
		if st := call(t, "POST", s.URL+"/api/v1/admin/webhooks", admin, map[string]string{"url": r.URL}, &w); st != http.StatusCreated {
			t.Fatalf("subscribe: %d", st)
		}
		r.SetSecret(t, w.Secret)
	}
	a := launch(t, s.URL, admin)
	var o struct{ ID, Status string }
	buyer := testutil.Token(t, 42, false)
	if st := call(t, "POST", fmt.Sprintf("%s/api/v1/activities/%d/orders", s.URL, a.ID), buyer, map[string]int{"quantity": 1}, &o); st != http.StatusAccepted {
		t.Fatalf("buy: %d", st)
	}
	for deadline := time.Now().Add(30 * time.Second); o.Status != "created"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the order is still %s", o.Status)
		}
		call(t, "GET", s.URL+"/api/v1/orders/"+o.ID, buyer, nil, &o)
	}
	if st := call(t, "POST", s.URL+"/api/v1/orders/"+o.ID+"/pay", testutil.ServiceToken(t, 900), nil, nil); st != http.StatusOK {
		t.Fatalf("pay as the shop: %d", st)
	}

	b := startBrowser(t)
	page := b.open(t, "admin-webhooks", 1280, 900)
	page.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+admin))
	page.waitFor("both endpoints", `document.querySelectorAll('#webhooks li').length === 2`)
	page.waitFor("two deliveries at the healthy endpoint",
		`document.querySelectorAll('#webhooks li[data-disabled="false"] tr[data-status="delivered"]').length === 2`)
	page.waitFor("the endpoint that answered 410 disabled",
		`document.querySelectorAll('#webhooks li[data-disabled="true"] tr[data-status="failed"]').length >= 1`)
	if got := page.text("#webhooks-note"); got != "2 endpoints, 1 disabled." {
		t.Errorf("webhooks note %q", got)
	}
	if got := page.text(`#webhooks li[data-disabled="false"] .deliveries-note`); got != "Newest 2 deliveries: 2 delivered, 0 pending, 0 given up." {
		t.Errorf("healthy endpoint's summary %q", got)
	}
	// Its order.paid was given up with it, or (the 410 recorded before the payment) never
	// written for it: either way its order.created reads the 410.
	if got := page.text(`#webhooks li[data-disabled="true"] tbody`); !strings.Contains(got, "order.createdGiven up1HTTP 410") {
		t.Errorf("the disabled endpoint's deliveries read %q, want its order.created answered HTTP 410", got)
	}
	page.do("scroll to the webhooks", chromedp.ScrollIntoView("#webhooks-title"))
	page.screenshot("admin-webhooks")
	// The section alone, as the docs show it.
	section, err := chromedp.Run(page.ctx, chromedp.Screenshot(`section[aria-labelledby="webhooks-title"]`))
	if err != nil {
		t.Fatalf("screenshot of the webhooks section: %v", err)
	}
	if err := os.WriteFile(filepath.Join(page.dir, "admin-webhooks-section.png"), section, 0o644); err != nil {
		t.Fatal(err)
	}
	page.fitsPhone(t)
	page.do("scroll to the webhooks", chromedp.ScrollIntoView("#webhooks-title"))
	page.screenshot("admin-webhooks-phone")
	page.checkConsole()
}
