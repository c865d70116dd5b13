package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"seckill/internal/testutil"
)

// TestVariantsInBrowser runs a sale of sizes through the pages in Debian's chromium,
// against the real API and worker: the admin creates it from the form's variants field
// (after the API's message about a duplicate size shows beside it), and its card lists
// each size's units; a buyer on a phone must choose a size, buys the last pair of one,
// and sees that size shown sold out (crossed out, not hidden) while the others sell; a
// second buyer chooses the sold-out size and joins its waitlist (the admin's card counts
// it); the first buyer cancels, and the second is offered the pair, with its pay
// window's countdown, in the sale's card and in their orders; the admin adds units to
// the size, and the buyer sees it on sale again. Screenshots go to the artifacts
// directory.
func TestVariantsInBrowser(t *testing.T) {
	s := testutil.StartStack(t)
	b := startBrowser(t)

	admin := b.open(t, "admin", 1280, 900)
	admin.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+testutil.Token(t, 1, true)))
	admin.waitFor("the create form", `!document.querySelector('#console').hidden`)
	admin.do("fill a sale of sizes, one named twice",
		chromedp.SendKeys(chromedp.CSS("#f-name"), "Drop"),
		chromedp.SendKeys(chromedp.CSS("#f-product"), "Sneaker"),
		chromedp.SetValue(chromedp.CSS("#f-price"), "120.00"),
		chromedp.SetValue(chromedp.CSS("#f-variants"), "EU 42: 1\nEU 43: 3\nEU 43: 2"),
		chromedp.SetValue(chromedp.CSS("#f-limit"), "2"),
		chromedp.SetValue(chromedp.CSS("#f-per-variant"), "1"),
		chromedp.Click(chromedp.CSS("#create-button")),
	)
	admin.waitFor("the variants' validation message", `document.querySelector('#f-variants-error').textContent !== ''`)
	if got := admin.text("#f-variants-error"); !strings.HasPrefix(got, "variants[2].name") {
		t.Errorf("message beside the variants: got %q, want the API's variants[2].name message", got)
	}
	admin.do("rename the third size and create",
		chromedp.SetValue(chromedp.CSS("#f-variants"), "EU 42: 1\nEU 43: 3\nEU 44: 2"),
		chromedp.Click(chromedp.CSS("#create-button")),
	)
	admin.waitFor("the new sale", `document.querySelector('#sales li .variants-table tbody tr:nth-child(3)') !== null`)
	if got := admin.text("#create-result"); !strings.Contains(got, "created with 6 units in 3 variants") {
		t.Errorf("create result: got %q", got)
	}

	buyer := b.open(t, "buyer", 390, 844)
	buyer.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 42, false)))
	buyer.waitFor("the sizes", `document.querySelectorAll('#sales li .variant').length === 3`)
	buyer.do("buy without a size", chromedp.Click(chromedp.CSS("#sales li .buy-button")))
	buyer.waitFor("the size asked for", `document.querySelector('#sales li .message').textContent === 'Choose a size first.'`)
	buyer.do("choose EU 42 and buy",
		chromedp.Click(chromedp.CSS(`#sales li .variant input[value="EU 42"]`)),
		chromedp.Click(chromedp.CSS("#sales li .buy-button")),
	)
	buyer.waitFor("the order of EU 42", `document.querySelector('#orders li .order-title')?.textContent.includes('(EU 42)')`)
	buyer.waitFor("EU 42 sold out, still shown",
		`(() => { const l = document.querySelectorAll('#sales li .variant')[0]; return l.classList.contains('sold-out') && l.textContent.includes('Sold out') })()`)
	if got := buyer.text("#sales li .variant:nth-child(2) .variant-left"); got != "3 left" {
		t.Errorf("EU 43 beside the sold-out size: got %q, want 3 left", got)
	}
	if got := buyer.text("#sales li .limit-text"); !strings.Contains(got, "1 of a size") {
		t.Errorf("the limits: got %q, want the per-size limit", got)
	}
	buyer.fitsPhone(t)
	buyer.screenshot("buyer-variants-phone")

	// A second buyer chooses the sold-out size: no Buy, its waitlist instead.
	other := b.open(t, "other", 390, 844)
	other.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 43, false)))
	other.waitFor("the sizes", `document.querySelectorAll('#sales li .variant.sold-out').length === 1`)
	other.do("choose the sold-out EU 42", chromedp.Click(chromedp.CSS(`#sales li .variant input[value="EU 42"]`)))
	other.waitFor("the waitlist offered", `!document.querySelector('#sales li .waitlist-box').hidden && document.querySelector('#sales li .buy-button').disabled`)
	other.do("join the waitlist", chromedp.Click(chromedp.CSS("#sales li .join-waitlist")))
	other.waitFor("on the waitlist", `document.querySelector('#sales li .waitlist-state').textContent.startsWith('On the waitlist for 1 unit of EU 42: 1st in line')`)
	other.screenshot("buyer-waitlist-phone")
	admin.waitFor("EU 42 sold out on the admin's card, one waiting",
		`document.querySelector('#sales li .variants-table tbody tr')?.dataset.status === 'sold_out' && `+figureIs("f-waitlist", "1"))
	admin.screenshot("admin-variants")
	// The variants of the card alone, as the docs show them.
	section, err := chromedp.Run(admin.ctx, chromedp.Screenshot(`#sales li .variants-admin`))
	if err != nil {
		t.Fatalf("screenshot of the variants: %v", err)
	}
	if err := os.WriteFile(filepath.Join(admin.dir, "admin-variants-table.png"), section, 0o644); err != nil {
		t.Fatal(err)
	}
	// The first buyer cancels: the pair is offered to the second, not put on sale.
	buyer.waitFor("the order created", `document.querySelector('#orders li[data-status="created"] .cancel') !== null`)
	buyer.do("cancel", chromedp.Click(chromedp.CSS(`#orders li[data-status="created"] .cancel`)))
	other.waitFor("the offer with its countdown",
		`document.querySelector('#sales li .waitlist-state').textContent.includes('1 unit of EU 42 is yours. Pay within')`)
	other.waitFor("the offered order", `(document.querySelector('#orders li[data-status="created"] .order-title')?.textContent || '').includes('offered from the waitlist')`)
	if got := other.text("#orders li .pay-clock"); !strings.HasPrefix(got, "Pay within") {
		t.Errorf("the offered order's pay clock: got %q", got)
	}
	other.fitsPhone(t)
	other.screenshot("buyer-waitlist-offer-phone")
	admin.waitFor("the waitlist empty", figureIs("f-waitlist", "0"))
	admin.do("add 2 units of EU 42",
		chromedp.SetValue(chromedp.CSS("#sales li .stock-variant"), "EU 42"),
		chromedp.SetValue(chromedp.CSS("#sales li .stock-input"), "2"),
		chromedp.Click(chromedp.CSS("#sales li .add-stock button")),
	)
	admin.waitFor("the units added", `document.querySelector('#sales li > .message').textContent.startsWith('Added 2 units of EU 42')`)
	buyer.waitFor("EU 42 on sale again", `document.querySelectorAll('#sales li .variant')[0].textContent.includes('2 left')`)
	for _, tb := range []*tab{admin, buyer, other} {
		tb.checkConsole()
	}
}
