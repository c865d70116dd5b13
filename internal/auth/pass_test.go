package auth_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/auth"
	"seckill/internal/buyer"
)

func TestPassVerify(t *testing.T) {
	const secret = "pass-test-secret-0123456789abcdef"
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	p := auth.NewPasses(secret)
	exp := now.Add(5 * time.Minute)
	pass, err := p.Sign("42", 7, exp)
	if err != nil {
		t.Fatal(err)
	}
	if again := signed(t)(p.Sign("42", 7, exp)); again != pass {
		t.Errorf("signing the same pass twice gave two strings")
	}
	bearer := signed(t)(auth.Sign(secret, "42", false, time.Hour, now)) // the user's bearer token
	other := signed(t)(auth.NewPasses("another-secret-0123456789abcdefghij").Sign("42", 7, exp))
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "42", "sale": 7, "exp": exp.Unix()})
	unsigned := signed(t)(none.SignedString(jwt.UnsafeAllowNoneSignatureType))
	uuidPass := signed(t)(p.Sign(uuid, 7, exp))
	parts := strings.Split(pass, ".")
	forged := signed(t)(p.Sign("43", 7, exp)) // buyer 43's claims under buyer 42's signature
	tampered := parts[0] + "." + strings.Split(forged, ".")[1] + "." + parts[2]

	for _, c := range []struct {
		name  string
		pass  string
		buyer buyer.ID
		sale  int64
		at    time.Time
		ok    bool
	}{
		{"valid", pass, "42", 7, now, true},
		{"valid a second before expiry", pass, "42", 7, exp.Add(-time.Second), true},
		{"expired", pass, "42", 7, exp, false},
		{"another buyer's", pass, "43", 7, now, false},
		{"another buyer's, the same digits with a leading zero", pass, "042", 7, now, false},
		{"a UUID buyer's", uuidPass, uuid, 7, now, true},
		{"a UUID buyer's, for another buyer", uuidPass, "42", 7, now, false},
		{"another sale's", pass, "42", 8, now, false},
		{"signed with another key", other, "42", 7, now, false},
		{"the bearer token", bearer, "42", 7, now, false},
		{"alg none", unsigned, "42", 7, now, false},
		{"tampered", tampered, "42", 7, now, false},
		{"garbage", "not-a-pass", "42", 7, now, false},
		{"empty", "", "42", 7, now, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Verify(c.pass, c.buyer, c.sale, c.at)
			if c.ok != (err == nil) {
				t.Fatalf("err = %v, want ok %v", err, c.ok)
			}
			if !c.ok && !errors.Is(err, auth.ErrInvalidPass) {
				t.Errorf("err = %v, want ErrInvalidPass", err)
			}
			if c.ok && !got.Equal(exp) {
				t.Errorf("expires %v, want %v", got, exp)
			}
		})
	}
}

// BenchmarkPassVerify is what a pass costs a purchase in the API process.
func BenchmarkPassVerify(b *testing.B) {
	p := auth.NewPasses("pass-test-secret-0123456789abcdef")
	now := time.Now()
	pass, _ := p.Sign("42", 7, now.Add(time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Verify(pass, "42", 7, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPassVerifyFirst is a pass's first check in a process (signature and JSON).
func BenchmarkPassVerifyFirst(b *testing.B) {
	now := time.Now()
	pass, _ := auth.NewPasses("pass-test-secret-0123456789abcdef").Sign("42", 7, now.Add(time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := auth.NewPasses("pass-test-secret-0123456789abcdef").Verify(pass, "42", 7, now); err != nil {
			b.Fatal(err)
		}
	}
}

// signed returns a function that fails the test on a signing error, else returns the token.
func signed(t *testing.T) func(string, error) string {
	return func(token string, err error) string {
		t.Helper()
		if err != nil || token == "" {
			t.Fatalf("sign: %q, %v", token, err)
		}
		return token
	}
}
