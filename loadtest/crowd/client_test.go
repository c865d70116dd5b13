package main

import (
	"fmt"
	"testing"
)

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"error":{"code":"sold_out","message":"The sale is sold out."}}`, "sold_out"},
		{`{"error":{"code":"rate_limited","message":"Too many purchases at once here; try again in a second."}}`, "rate_limited"},
		{`{"error":{"message":"first","code":"busy"}}`, "busy"}, // another order: decoded
		{`{ "error": { "code": "not_found" } }`, "not_found"},   // spaces: decoded
		{`{"error":{"code":"a\"b","message":"m"}}`, `a"b`},      // an escape: decoded
		{`{"error":{"code":"","message":"m"}}`, "?"},            // no code
		{`<html>502 Bad Gateway</html>`, "?"},                   // not the contract's body
		{``, "?"},
		{`{"error":{"code":"sold_out`, "?"}, // cut short
	} {
		if got := errorCode([]byte(tc.body)); got != tc.want {
			t.Errorf("errorCode(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestQuantityBody(t *testing.T) {
	for q := -1; q <= 12; q++ {
		if got, want := string(quantityBody(q)), fmt.Sprintf(`{"quantity":%d}`, q); got != want {
			t.Errorf("quantityBody(%d) = %s, want %s", q, got, want)
		}
	}
}

func TestForwardedFor(t *testing.T) {
	a, b := forwardedFor("token-a"), forwardedFor("token-b")
	if a != forwardedFor("token-a") {
		t.Errorf("the same token gave %s and %s", a, forwardedFor("token-a"))
	}
	if a == b {
		t.Errorf("two tokens gave the same address %s", a)
	}
	var x, y, z int
	if n, err := fmt.Sscanf(a, "10.%d.%d.%d", &x, &y, &z); n != 3 || err != nil || x > 255 || y > 255 || z > 255 {
		t.Errorf("forwardedFor = %q, want an address in 10.0.0.0/8", a)
	}
}
