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
// and sees that size shown sold out (crossed out, not hidden, not choosable) while the
// others sell; the admin's card shows it sold out and adds units to it, and the buyer
// sees it on sale again. Screenshots go to the artifacts directory.
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
		`(() => { const l = document.querySelectorAll('#sales li .variant')[0]; return l.classList.contains('sold-out') && l.querySelector('input').disabled && l.textContent.includes('Sold out') })()`)
	if got := buyer.text("#sales li .variant:nth-child(2) .variant-left"); got != "3 left" {
		t.Errorf("EU 43 beside the sold-out size: got %q, want 3 left", got)
	}
	if got := buyer.text("#sales li .limit-text"); !strings.Contains(got, "1 of a size") {
		t.Errorf("the limits: got %q, want the per-size limit", got)
	}
	buyer.fitsPhone(t)
	buyer.screenshot("buyer-variants-phone")

	admin.waitFor("EU 42 sold out on the admin's card",
		`document.querySelector('#sales li .variants-table tbody tr')?.dataset.status === 'sold_out'`)
	admin.screenshot("admin-variants")
	// The variants of the card alone, as the docs show them.
	section, err := chromedp.Run(admin.ctx, chromedp.Screenshot(`#sales li .variants-admin`))
	if err != nil {
		t.Fatalf("screenshot of the variants: %v", err)
	}
	if err := os.WriteFile(filepath.Join(admin.dir, "admin-variants-table.png"), section, 0o644); err != nil {
		t.Fatal(err)
	}
	admin.do("add 2 units of EU 42",
		chromedp.SetValue(chromedp.CSS("#sales li .stock-variant"), "EU 42"),
		chromedp.SetValue(chromedp.CSS("#sales li .stock-input"), "2"),
		chromedp.Click(chromedp.CSS("#sales li .add-stock button")),
	)
	buyer.waitFor("EU 42 on sale again", `document.querySelectorAll('#sales li .variant')[0].textContent.includes('2 left')`)
	for _, tb := range []*tab{admin, buyer} {
		tb.checkConsole()
	}
}
