package auth

import "testing"

// A cursor opens to its position for the scope it was issued for, and for nothing
// else: another scope, another secret, a changed byte, a made-up one.
func TestCursors(t *testing.T) {
	c := NewCursors("a secret of at least thirty-two bytes")
	cur := c.Issue("orders 1 paid *", "01JD6Y4ZQ2H3N8V5XK7M9P0RST42")
	if pos, ok := c.Open("orders 1 paid *", cur); !ok || pos != "01JD6Y4ZQ2H3N8V5XK7M9P0RST42" {
		t.Fatalf("Open = %q, %v; want the position", pos, ok)
	}
	changed := []byte(cur)
	changed[3] ^= 1
	for _, tc := range []struct{ name, scope, cursor string }{
		{"another scope", "orders 1 created *", cur},
		{"another sale", "orders 2 paid *", cur},
		{"another secret", "orders 1 paid *", NewCursors("another secret of thirty-two bytes!").Issue("orders 1 paid *", "x")},
		{"a changed byte", "orders 1 paid *", string(changed)},
		{"made up", "orders 1 paid *", "MDFKRDZZNFpRMkgzTjhWNVhLN005UDBSU1Q0Mg"},
		{"empty", "orders 1 paid *", ""},
		{"not base64", "orders 1 paid *", "!!.??"},
	} {
		if pos, ok := c.Open(tc.scope, tc.cursor); ok {
			t.Errorf("%s: Open = %q, true; want refused", tc.name, pos)
		}
	}
}
