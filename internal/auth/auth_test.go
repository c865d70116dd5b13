package auth_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/auth"
	"seckill/internal/buyer"
)

const secret = "0123456789abcdef0123456789abcdef"

const uuid = "8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2"

func TestVerify(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	sign := func(c jwt.MapClaims, m jwt.SigningMethod, key any) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good, _ := auth.Sign(secret, "42", false, time.Hour, now)
	admin, _ := auth.Sign(secret, "7", true, time.Hour, now)
	service, _ := auth.SignRole(secret, "9", auth.RoleService, time.Hour, now)
	subject := func(sub string) string {
		return sign(jwt.MapClaims{"sub": sub, "role": "user", "exp": now.Add(time.Hour).Unix()}, jwt.SigningMethodHS256, []byte(secret))
	}
	exp := now.Add(time.Hour).Unix()
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	body := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"42","role":"admin","exp":9999999999}`))

	tests := []struct {
		name  string
		token string
		want  auth.Identity
		ok    bool
	}{
		{"user", good, auth.Identity{Buyer: "42"}, true},
		{"admin", admin, auth.Identity{Buyer: "7", Admin: true}, true},
		{"service", service, auth.Identity{Buyer: "9", Service: true}, true},
		{"other key", sign(jwt.MapClaims{"sub": "42", "role": "user", "exp": exp}, jwt.SigningMethodHS256, []byte(strings.Repeat("x", 32))), auth.Identity{}, false},
		{"alg none", header + "." + body + ".", auth.Identity{}, false},
		{"HS512", sign(jwt.MapClaims{"sub": "42", "role": "user", "exp": exp}, jwt.SigningMethodHS512, []byte(secret)), auth.Identity{}, false},
		{"no exp", sign(jwt.MapClaims{"sub": "42", "role": "user"}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
		{"expired", sign(jwt.MapClaims{"sub": "42", "role": "user", "exp": now.Add(-time.Second).Unix()}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
		{"sub a UUID", subject(uuid), auth.Identity{Buyer: uuid}, true},
		{"sub auth0|…", subject("auth0|64f1c2a9e0b7d3f1a2c4e6b8"), auth.Identity{Buyer: "auth0|64f1c2a9e0b7d3f1a2c4e6b8"}, true},
		{"sub of 21 digits", subject("109876543210987654321"), auth.Identity{Buyer: "109876543210987654321"}, true},
		{"sub zero", subject("0"), auth.Identity{Buyer: "0"}, true},
		{"sub of 255 bytes", subject(strings.Repeat("é", 127) + "x"), auth.Identity{Buyer: buyer.ID(strings.Repeat("é", 127) + "x")}, true},
		{"sub empty", subject(""), auth.Identity{}, false},
		{"sub absent", sign(jwt.MapClaims{"role": "user", "exp": exp}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
		{"sub of 256 bytes", subject(strings.Repeat("x", 256)), auth.Identity{}, false},
		{"sub with a control character", subject("auth0|42\n"), auth.Identity{}, false},
		{"sub a number", sign(jwt.MapClaims{"sub": 42, "role": "user", "exp": exp}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
		{"unknown role", sign(jwt.MapClaims{"sub": "42", "role": "root", "exp": exp}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
		{"garbage", "not.a.token", auth.Identity{}, false},
		{"empty", "", auth.Identity{}, false},
	}
	v := auth.NewVerifier(secret, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := 0; round < 2; round++ { // the second round answers from the cache
				got, err := v.Verify(tt.token, now)
				if tt.ok && (err != nil || got != tt.want) {
					t.Fatalf("round %d: got %+v, %v; want %+v", round, got, err, tt.want)
				}
				if !tt.ok && !errors.Is(err, auth.ErrInvalidToken) {
					t.Fatalf("round %d: err = %v, want ErrInvalidToken", round, err)
				}
			}
		})
	}
	if _, err := auth.SignRole(secret, "1", "root", time.Hour, now); err == nil {
		t.Error("SignRole signed a token of an unknown role")
	}
	for _, sub := range []buyer.ID{"", buyer.ID(strings.Repeat("x", 256)), "a\tb"} {
		if _, err := auth.Sign(secret, sub, false, time.Hour, now); err == nil {
			t.Errorf("Sign signed a token for subject %q, which names no buyer", sub)
		}
	}
	// A cached token still expires.
	if _, err := v.Verify(good, now.Add(2*time.Hour)); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("cached token after exp: err = %v, want ErrInvalidToken", err)
	}
}
