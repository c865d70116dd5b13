package buyer_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"

	"seckill/internal/buyer"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, subject string
		ok            bool
	}{
		{"decimal", "42", true},
		{"uuid", "8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2", true},
		{"auth0", "auth0|64f1c2a9e0b7d3f1a2c4e6b8", true},
		{"google, 21 digits", "109876543210987654321", true},
		{"a space inside and at the end", "a b ", true},
		{"non-ASCII", "müller@例え.jp", true},
		{"a no-break space (not a control character)", "a\u00a0b", true},
		{"255 bytes", strings.Repeat("x", 255), true},
		{"empty", "", false},
		{"256 bytes", strings.Repeat("x", 256), false},
		{"a tab", "a\tb", false},
		{"a newline", "a\n", false},
		{"NUL", "a\x00", false},
		{"DEL", "a\x7f", false},
		{"a C1 control", "a\u0085b", false},
		{"not UTF-8", "a\xffb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := buyer.Parse(tt.subject)
			if tt.ok && (err != nil || string(id) != tt.subject) {
				t.Fatalf("got %q, %v; want %q", id, err, tt.subject)
			}
			if !tt.ok && !errors.Is(err, buyer.ErrInvalid) {
				t.Fatalf("got %q, %v; want ErrInvalid", id, err)
			}
		})
	}
}

func TestUserIDAndKey(t *testing.T) {
	tests := []struct {
		id      buyer.ID
		userID  int64 // 0: not a decimal buyer
		key     string
		jsonOut string
	}{
		{"42", 42, "42", `{"buyer":"42","user_id":42}`},
		{"1", 1, "1", `{"buyer":"1","user_id":1}`},
		{"9223372036854775807", 9223372036854775807, "9223372036854775807",
			`{"buyer":"9223372036854775807","user_id":9223372036854775807}`},
		{"9223372036854775808", 0, "~9223372036854775808", `{"buyer":"9223372036854775808"}`},
		{"109876543210987654321", 0, "~109876543210987654321", `{"buyer":"109876543210987654321"}`},
		{"0", 0, "~0", `{"buyer":"0"}`},
		{"042", 0, "~042", `{"buyer":"042"}`},
		{"+42", 0, "~+42", `{"buyer":"+42"}`},
		{"-42", 0, "~-42", `{"buyer":"-42"}`},
		{"4_2", 0, "~4_2", `{"buyer":"4_2"}`},
		{"p1", 0, "~p1", `{"buyer":"p1"}`},
		{"~x", 0, "~~x", `{"buyer":"~x"}`},
		{"a b", 0, "~a%20b", `{"buyer":"a b"}`},
		{"a%20b", 0, "~a%2520b", `{"buyer":"a%20b"}`},
		{"100%", 0, "~100%25", `{"buyer":"100%"}`},
		{"auth0|AbC", 0, "~auth0|AbC", `{"buyer":"auth0|AbC"}`},
		{"auth0|abc", 0, "~auth0|abc", `{"buyer":"auth0|abc"}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.id), func(t *testing.T) {
			n, ok := tt.id.UserID()
			if n != tt.userID || ok != (tt.userID != 0) {
				t.Errorf("UserID: got %d, %v; want %d", n, ok, tt.userID)
			}
			if got := tt.id.Key(); got != tt.key {
				t.Errorf("Key: got %q, want %q", got, tt.key)
			}
			back, err := buyer.FromKey(tt.key)
			if err != nil || back != tt.id {
				t.Errorf("FromKey(%q): got %q, %v; want %q", tt.key, back, err, tt.id)
			}
			j, err := json.Marshal(tt.id.Named())
			if err != nil || string(j) != tt.jsonOut {
				t.Errorf("Named: got %s, %v; want %s", j, err, tt.jsonOut)
			}
			if tt.userID != 0 && buyer.Of(tt.userID) != tt.id {
				t.Errorf("Of(%d): got %q, want %q", tt.userID, buyer.Of(tt.userID), tt.id)
			}
		})
	}
}

// Keys that no buyer has are refused, so a key read back is always one buyer's.
func TestFromKeyRefusesWhatNoBuyerHas(t *testing.T) {
	for _, key := range []string{
		"", "~", "042", "0", "-1", "9223372036854775808", "abc", "p42", "~42", "~0042x%", "~a b", "~a%2", "~a%41",
		"~a\tb", "~" + strings.Repeat("x", 256), "~\xff",
	} {
		if id, err := buyer.FromKey(key); !errors.Is(err, buyer.ErrInvalid) {
			t.Errorf("FromKey(%q): got %q, %v; want ErrInvalid", key, id, err)
		}
	}
}

// checkKey fails when the key of a valid subject breaks a rule of keys, or does not
// read back as its buyer.
func checkKey(t *testing.T, id buyer.ID) string {
	t.Helper()
	key := id.Key()
	if key == "" || strings.ContainsRune(key, ' ') || strings.ContainsFunc(key, unicode.IsControl) {
		t.Fatalf("Key(%q) = %q: empty, or holds a space or a control character", id, key)
	}
	if c := key[0]; c != '~' && (c < '1' || c > '9') {
		t.Fatalf("Key(%q) = %q begins with neither a digit nor ~", id, key)
	}
	if _, decimal := id.UserID(); decimal != (key == string(id)) {
		t.Fatalf("Key(%q) = %q: a key is its subject exactly for a decimal buyer", id, key)
	}
	back, err := buyer.FromKey(key)
	if err != nil || back != id {
		t.Fatalf("FromKey(Key(%q)) = %q, %v", id, back, err)
	}
	return key
}

// Every buyer's key reads back as the buyer, and two buyers never share a key.
func FuzzKey(f *testing.F) {
	for _, s := range [][2]string{
		{"42", "~42"}, {"p1", "1"}, {"a b", "a%20b"}, {"auth0|AbC", "auth0|abc"}, {"a", "a "}, {"%", "%25"},
		{"042", "42"}, {"~x", "x"}, {"109876543210987654321", "9223372036854775807"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ida, erra := buyer.Parse(a)
		idb, errb := buyer.Parse(b)
		if erra != nil || errb != nil {
			return
		}
		ka, kb := checkKey(t, ida), checkKey(t, idb)
		if (ka == kb) != (a == b) {
			t.Fatalf("buyers %q and %q have keys %q and %q", a, b, ka, kb)
		}
	})
}
