package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testutil"
)

// TestShopInBrowser: a shop with its own checkout and its own identity provider. The
// buyer's page sends the buyer (a subject that is not a number) to the shop's checkout
// instead of its pay button (a buyer's payment is the shop's, outside dev mode); the
// shop confirms the payment; the admin's page lists the sale's orders, paid by the shop,
// naming the buyer by subject, and refunds the order with its units kept off sale; the
// figures and the buyer's page show the refund.
func TestShopInBrowser(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_CHECKOUT_URL=https://shop.example/checkout?order={order_id}")
	const subject = "auth0|64f1c2e9"
	admin, buyer := testutil.Token(t, 1, true), testutil.TokenOf(t, subject, false)
	a := launch(t, s.URL, admin)
	var o struct{ ID, Status string }
	if st := call(t, "POST", fmt.Sprintf("%s/api/v1/activities/%d/orders", s.URL, a.ID), buyer, map[string]int{"quantity": 1}, &o); st != http.StatusAccepted {
		t.Fatalf("buy: %d", st)
	}

	b := startBrowser(t)
	page := b.open(t, "buyer-checkout", 390, 844)
	page.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+buyer))
	page.waitFor("the order created, with the shop's checkout", `document.querySelector('#orders li[data-status="created"] .checkout:not([hidden])') !== null`)
	if got, want := page.eval(`document.querySelector('#orders li .checkout').href`), "https://shop.example/checkout?order="+o.ID; got != want {
		t.Errorf("checkout link %q, want %q", got, want)
	}
	if got := page.eval(`String(document.querySelector('#orders li .pay').hidden)`); got != "true" {
		t.Error("the page's own pay button shows beside the shop's checkout")
	}
	if got := page.text("#orders li .checkout"); got != "Pay 499.00 at the shop" {
		t.Errorf("checkout link reads %q", got)
	}
	page.screenshot("buyer-checkout-phone")

	shop := testutil.ServiceToken(t, 900)
	if st := call(t, "POST", s.URL+"/api/v1/orders/"+o.ID+"/pay", shop, nil, nil); st != http.StatusOK {
		t.Fatalf("the shop's confirmation: %d", st)
	}
	page.waitFor("the order paid", `document.querySelector('#orders li[data-status="paid"]') !== null`)
	// The sale's pages list an order once it is past their horizon (sale.Service.ListMargin).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var p struct{ Orders []struct{ ID string } }
		call(t, "GET", fmt.Sprintf("%s/api/v1/orders?activity_id=%d", s.URL, a.ID), shop, nil, &p)
		if len(p.Orders) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the order is not listed: %+v", p)
		}
	}

	back := b.open(t, "admin-orders", 1280, 900)
	back.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+admin))
	back.waitFor("the sale", `document.querySelector('#sales li .orders-load') !== null`)
	back.do("show the paid orders",
		chromedp.SetValue(chromedp.CSS("#sales li .orders-status"), "paid"),
		chromedp.Click(chromedp.CSS("#sales li .orders-load")),
	)
	back.waitFor("the paid order", fmt.Sprintf(`document.querySelector('#sales li .orders-table tr[data-order-id=%q][data-status="paid"]') !== null`, o.ID))
	if got := back.text("#sales li .orders-table tbody tr"); !strings.Contains(got, "by the shop") || !strings.Contains(got, subject) ||
		strings.Contains(got, "undefined") {
		t.Errorf("the order's row reads %q, want it paid by the shop, buyer %s", got, subject)
	}
	back.do("scroll to the orders", chromedp.ScrollIntoView("#sales li .orders-admin"))
	back.screenshot("admin-orders")
	back.do("refund, the units kept off sale",
		chromedp.Click(chromedp.CSS("#sales li .refund-restock")),
		chromedp.Click(chromedp.CSS("#sales li .refund-button")),
	)
	back.waitFor("the order refunded", `document.querySelector('#sales li .orders-table tr[data-status="refunded"]') !== null`)
	if got := back.text("#sales li .orders-table tbody tr"); !strings.Contains(got, "kept off sale") {
		t.Errorf("the refunded row reads %q", got)
	}
	back.waitFor("the figures after the refund", figureIs("f-refunded", "1")+" && "+figureIs("f-off-sale", "1")+" && "+
		figureIs("f-available", "4")+" && "+figureIs("f-sold", "0"))
	back.screenshot("admin-order-refunded")
	page.waitFor("the buyer's order refunded", `document.querySelector('#orders li[data-status="refunded"]') !== null`)
	if got := page.text(`#orders li[data-status="refunded"] .order-status`); !strings.HasPrefix(got, "Refunded on") {
		t.Errorf("the refunded order reads %q", got)
	}
	for _, tb := range []*tab{page, back} {
		tb.checkConsole()
	}
}
