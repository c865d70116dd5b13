package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testutil"
)

// TestEarlyAccessInBrowser runs early access through the pages in Debian's chromium,
// against the real API and worker: the admin creates a sale whose early window is open
// (the form's early access field), imports a CSV of the shop's codes (a header line and
// a quoted code among them), imports it again (nothing new), makes three codes and
// revokes one; a buyer on a phone sees that the sale opens early to code holders, cannot
// buy without a code, is told so for a wrong code, and buys with a right one; a second
// buyer with the same code is told it serves another buyer. The admin's card counts the
// codes used and the early order. Screenshots go to the artifacts directory.
func TestEarlyAccessInBrowser(t *testing.T) {
	s := testutil.StartStack(t)
	b := startBrowser(t)

	admin := b.open(t, "admin", 1280, 900)
	admin.do("open the admin page", chromedp.Navigate(s.URL+"/admin#token="+testutil.Token(t, 1, true)))
	admin.waitFor("the create form", `!document.querySelector('#console').hidden`)
	admin.do("fill a sale that starts in an hour, open to code holders two hours before",
		chromedp.SendKeys(chromedp.CSS("#f-name"), "Members first"),
		chromedp.SendKeys(chromedp.CSS("#f-product"), "Sneaker"),
		chromedp.SetValue(chromedp.CSS("#f-price"), "120.00"),
		chromedp.SetValue(chromedp.CSS("#f-stock"), "5"),
		chromedp.SetValue(chromedp.CSS("#f-limit"), "1"),
		chromedp.SetValue(chromedp.CSS("#f-starts"), admin.localTime(time.Hour)),
		chromedp.SetValue(chromedp.CSS("#f-ends"), admin.localTime(2*time.Hour)),
		chromedp.SetValue(chromedp.CSS("#f-early"), "7200"),
		chromedp.Click(chromedp.CSS("#create-button")),
	)
	admin.waitFor("the sale's early access", `(document.querySelector('#sales li .codes-text')?.textContent || '').startsWith('Early window: from')`)

	csv := filepath.Join(t.TempDir(), "members.csv")
	if err := os.WriteFile(csv, []byte("code,email\nMEMBER-0001,a@example.com\n\"MEMBER-0002\",b@example.com\n\nMEMBER-0003\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 codes read, 3 new", "3 codes read, 0 new"} {
		admin.do("import the CSV",
			chromedp.SetUploadFiles(chromedp.CSS("#sales li .import-file"), []string{csv}),
			chromedp.Click(chromedp.CSS("#sales li .import-codes button")),
		)
		admin.waitFor(want, `document.querySelector('#sales li .codes-message').textContent.startsWith(`+jsString(want)+`)`)
	}
	admin.do("make three codes",
		chromedp.SetValue(chromedp.CSS("#sales li .make-count"), "3"),
		chromedp.Click(chromedp.CSS("#sales li .make-codes button")),
	)
	admin.waitFor("the codes made", `document.querySelector('#sales li .codes-message').textContent.startsWith('3 codes made: ')`)
	if got := admin.eval(`document.querySelector('#sales li .codes-download').hidden + ' ' + document.querySelector('#sales li .codes-download').download`); !strings.HasPrefix(got, "false access-codes-") {
		t.Errorf("the download of the codes made: %q", got)
	}
	admin.do("revoke MEMBER-0003",
		chromedp.SetValue(chromedp.CSS("#sales li .revoke-input"), "MEMBER-0003"),
		chromedp.Click(chromedp.CSS("#sales li .revoke-code button")),
	)
	admin.waitFor("the revoke", `document.querySelector('#sales li .codes-message').textContent.startsWith('Code MEMBER-0003 revoked')`)
	admin.waitFor("the codes' figures", figureIs("f-codes-issued", "5")+` && `+figureIs("f-codes-revoked", "1"))
	// The card's early access alone, as the docs show it.
	section, err := chromedp.Run(admin.ctx, chromedp.Screenshot(`#sales li .codes-admin`))
	if err != nil {
		t.Fatalf("screenshot of the early access: %v", err)
	}
	if err := os.WriteFile(filepath.Join(admin.dir, "admin-early-access.png"), section, 0o644); err != nil {
		t.Fatal(err)
	}

	// The early window changed on the card: a value past a week is refused beside its
	// field, with the API's sentence; a good one is saved, and said beside the form.
	for _, step := range []struct{ value, slot, want string }{
		{"604801", ".early-error", "early_access_seconds must be"},
		{"7000", ".codes-message", "Saved. Early window: from"},
	} {
		admin.do("set the early window to "+step.value,
			chromedp.SetValue(chromedp.CSS("#sales li .early-input"), step.value),
			chromedp.Click(chromedp.CSS("#sales li .early-form button")),
		)
		admin.waitFor(step.want, `document.querySelector('#sales li `+step.slot+`').textContent.startsWith(`+jsString(step.want)+`)`)
	}
	if got := admin.text("#sales li > .message"); got != "" {
		t.Errorf("the card's own message after the window saved: %q, want none", got)
	}

	buyer := b.open(t, "buyer", 390, 844)
	buyer.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 42, false)))
	buyer.waitFor("the code field", `document.querySelector('#sales li .early')?.hidden === false`)
	if got := buyer.text("#sales li .message"); !strings.HasPrefix(got, "Early access: buyers with an access code may buy now") {
		t.Errorf("the sale without a code: %q", got)
	}
	if got := buyer.eval(`String(document.querySelector('#sales li .buy-button').disabled)`); got != "true" {
		t.Errorf("Buy without a code: disabled %s, want true", got)
	}
	buyer.do("enter a revoked code and buy",
		chromedp.SendKeys(chromedp.CSS("#sales li .early-code"), "MEMBER-0003"),
		chromedp.Click(chromedp.CSS("#sales li .buy-button")),
	)
	buyer.waitFor("the code refused", `document.querySelector('#sales li .message').textContent.startsWith('This access code is not one of this sale')`)
	// The field emptied as a buyer's select-all and delete would, with its input event.
	buyer.eval(`(() => { const f = document.querySelector('#sales li .early-code'); f.value = '';
		f.dispatchEvent(new Event('input')); return ''; })()`)
	buyer.do("enter a right code and buy",
		chromedp.SendKeys(chromedp.CSS("#sales li .early-code"), "MEMBER-0001"),
		chromedp.Click(chromedp.CSS("#sales li .buy-button")),
	)
	buyer.waitFor("the early order", `document.querySelector('#sales li .message').textContent.startsWith('Order placed')`)
	buyer.fitsPhone(t)
	buyer.screenshot("buyer-early-access-phone")

	other := b.open(t, "other", 390, 844)
	other.do("open the buyer page", chromedp.Navigate(s.URL+"/#token="+testutil.Token(t, 43, false)))
	other.waitFor("the code field", `document.querySelector('#sales li .early')?.hidden === false`)
	other.do("enter the first buyer's code and buy",
		chromedp.SendKeys(chromedp.CSS("#sales li .early-code"), "MEMBER-0001"),
		chromedp.Click(chromedp.CSS("#sales li .buy-button")),
	)
	other.waitFor("the code taken", `document.querySelector('#sales li .message').textContent.startsWith('This access code was presented by another buyer')`)

	admin.waitFor("the code used and the early order counted", figureIs("f-codes-used", "1")+` && `+figureIs("f-codes-orders", "1"))
	for _, tb := range []*tab{admin, buyer, other} {
		tb.checkConsole()
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
