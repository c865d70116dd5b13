package auth_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/auth"
)

const secret = "0123456789abcdef0123456789abcdef"

func TestVerify(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	sign := func(c jwt.MapClaims, m jwt.SigningMethod, key any) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good, _ := auth.Sign(secret, 42, false, time.Hour, now)
	admin, _ := auth.Sign(secret, 7, true, time.Hour, now)
	service, _ := auth.SignRole(secret, 9, auth.RoleService, time.Hour, now)
	exp := now.Add(time.Hour).Unix()
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	body := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"42","role":"admin","exp":9999999999}`))

	tests := []struct {
		name  string
		token string
		want  auth.Identity
		ok    bool
	}{
		{"user", good, auth.Identity{UserID: 42}, true},
		{"admin", admin, auth.Identity{UserID: 7, Admin: true}, true},
		{"service", service, auth.Identity{UserID: 9, Service: true}, true},
		{"other key", sign(jwt.MapClaims{"sub": "42", "role": "user", "exp": exp}, jwt.SigningMethodHS256, []byte(strings.Repeat("x", 32))), auth.Identity{}, false},
		{"alg none", header + "." + body + ".", auth.Identity{}, false},
		{"HS512", sign(jwt.MapClaims{"sub": "42", "role": "user", "exp": exp}, jwt.SigningMethodHS512, []byte(secret)), auth.Identity{}, false},
		{"no exp", sign(jwt.MapClaims{"sub": "42", "role": "user"}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
		{"expired", sign(jwt.MapClaims{"sub": "42", "role": "user", "exp": now.Add(-time.Second).Unix()}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
		{"sub not a number", sign(jwt.MapClaims{"sub": "bob", "role": "user", "exp": exp}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
		{"sub zero", sign(jwt.MapClaims{"sub": "0", "role": "user", "exp": exp}, jwt.SigningMethodHS256, []byte(secret)), auth.Identity{}, false},
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
	if _, err := auth.SignRole(secret, 1, "root", time.Hour, now); err == nil {
		t.Error("SignRole signed a token of an unknown role")
	}
	// A cached token still expires.
	if _, err := v.Verify(good, now.Add(2*time.Hour)); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("cached token after exp: err = %v, want ErrInvalidToken", err)
	}
}
