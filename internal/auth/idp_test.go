package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

// newIdPVerifier returns a Verifier of HS256 tokens (secret) and of the tokens of p,
// with the identity provider's settings in cfg.
func newIdPVerifier(t *testing.T, p *testutil.IdP, cfg auth.IdPConfig) *auth.Verifier {
	t.Helper()
	cfg.JWKSURL = p.URL
	idp, err := auth.NewIdP(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return auth.NewVerifier(secret, idp)
}

// Tokens of a shop's identity provider, checked against its JWK Set served by a local
// server: RS256 and ES256 keys, iss and aud, the claims, and tokens whose alg does not
// fit their key.
func TestIdPTokens(t *testing.T) {
	p := testutil.StartIdP(t)
	p.AddKey("rsa-1", "RS256")
	p.AddKey("ec-1", "ES256")
	p.AddKeyWithoutAlg("rsa-bare", "RS256")
	p.AddKeyWithoutAlg("ec-bare", "ES256")
	now := time.Now()
	v := newIdPVerifier(t, p, auth.IdPConfig{Issuer: "https://idp.example", Audience: "seckill",
		AdminRoles: []string{"seckill-admin", "admin"}, ServiceRoles: []string{"shop-backend", "service"}, Leeway: 30 * time.Second})
	custom := newIdPVerifier(t, p, auth.IdPConfig{UserClaim: "uid", RoleClaim: "realm_access.roles", AdminRoles: []string{"admin"}})
	unlisted := newIdPVerifier(t, p, auth.IdPConfig{Issuer: "https://idp.example", Audience: "seckill"})

	claims := func(replace jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "42", "role": "user", "iss": "https://idp.example", "aud": "seckill",
			"exp": now.Add(time.Hour).Unix()}
		for k, val := range replace {
			if val == nil {
				delete(c, k)
			} else {
				c[k] = val
			}
		}
		return c
	}
	der, err := x509.MarshalPKIXPublicKey(p.PublicKey("rsa-1"))
	if err != nil {
		t.Fatal(err)
	}
	publicPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	ours, _ := auth.Sign(secret, "7", true, time.Hour, now)

	tests := []struct {
		name  string
		v     *auth.Verifier
		token string
		want  auth.Identity
		ok    bool
	}{
		{"RS256", v, p.Sign("rsa-1", claims(nil)), auth.Identity{Buyer: "42"}, true},
		{"ES256 admin", v, p.Sign("ec-1", claims(jwt.MapClaims{"role": "admin"})), auth.Identity{Buyer: "42", Admin: true}, true},
		{"a list of roles", v, p.Sign("rsa-1", claims(jwt.MapClaims{"role": []string{"user", "service"}})), auth.Identity{Buyer: "42", Service: true}, true},
		{"aud as a list", v, p.Sign("rsa-1", claims(jwt.MapClaims{"aud": []string{"other", "seckill"}})), auth.Identity{Buyer: "42"}, true},
		{"our own HS256 token beside them", v, ours, auth.Identity{Buyer: "7", Admin: true}, true},
		{"claims named by the settings", custom, p.Sign("rsa-1", jwt.MapClaims{"uid": 1234567890123, "exp": now.Add(time.Hour).Unix(),
			"realm_access": map[string]any{"roles": []string{"offline_access", "admin"}}}), auth.Identity{Buyer: "1234567890123", Admin: true}, true},
		{"wrong issuer", v, p.Sign("rsa-1", claims(jwt.MapClaims{"iss": "https://evil.example"})), auth.Identity{}, false},
		{"no issuer", v, p.Sign("rsa-1", claims(jwt.MapClaims{"iss": nil})), auth.Identity{}, false},
		{"wrong audience", v, p.Sign("rsa-1", claims(jwt.MapClaims{"aud": "another-app"})), auth.Identity{}, false},
		{"no audience", v, p.Sign("rsa-1", claims(jwt.MapClaims{"aud": nil})), auth.Identity{}, false},
		{"expired", v, p.Sign("rsa-1", claims(jwt.MapClaims{"exp": now.Add(-time.Minute).Unix()})), auth.Identity{}, false},
		{"no exp", v, p.Sign("rsa-1", claims(jwt.MapClaims{"exp": nil})), auth.Identity{}, false},
		{"a UUID subject", v, p.Sign("rsa-1", claims(jwt.MapClaims{"sub": uuid})), auth.Identity{Buyer: uuid}, true},
		{"an auth0|… subject", v, p.Sign("ec-1", claims(jwt.MapClaims{"sub": "auth0|64f1c2a9e0b7d3f1a2c4e6b8"})),
			auth.Identity{Buyer: "auth0|64f1c2a9e0b7d3f1a2c4e6b8"}, true},
		{"a subject of 21 digits", v, p.Sign("rsa-1", claims(jwt.MapClaims{"sub": "109876543210987654321"})),
			auth.Identity{Buyer: "109876543210987654321"}, true},
		{"a user claim of 21 digits as a JSON integer", custom, p.Sign("rsa-1", jwt.MapClaims{"uid": json.Number("109876543210987654321"),
			"realm_access": map[string]any{"roles": []string{"user"}}, "exp": now.Add(time.Hour).Unix()}), auth.Identity{Buyer: "109876543210987654321"}, true},
		{"a user claim that is a string", custom, p.Sign("rsa-1", jwt.MapClaims{"uid": "auth0|7", "realm_access": map[string]any{"roles": []string{"user"}},
			"exp": now.Add(time.Hour).Unix()}), auth.Identity{Buyer: "auth0|7"}, true},
		{"an empty subject", v, p.Sign("rsa-1", claims(jwt.MapClaims{"sub": ""})), auth.Identity{}, false},
		{"no subject", v, p.Sign("rsa-1", claims(jwt.MapClaims{"sub": nil})), auth.Identity{}, false},
		{"a subject of 256 bytes", v, p.Sign("rsa-1", claims(jwt.MapClaims{"sub": strings.Repeat("x", 256)})), auth.Identity{}, false},
		{"a subject with a control character", v, p.Sign("rsa-1", claims(jwt.MapClaims{"sub": "auth0|4\x002"})), auth.Identity{}, false},
		{"a user claim with a fraction", custom, p.Sign("rsa-1", jwt.MapClaims{"uid": 4.5, "realm_access": map[string]any{"roles": []string{"user"}},
			"exp": now.Add(time.Hour).Unix()}), auth.Identity{}, false},
		{"a user claim that is an object", custom, p.Sign("rsa-1", jwt.MapClaims{"uid": map[string]any{"id": "1"}, "realm_access": map[string]any{"roles": []string{"user"}},
			"exp": now.Add(time.Hour).Unix()}), auth.Identity{}, false},
		// Roles: admin and service only by a listed name; any other valid token is a buyer.
		{"no role: a buyer", v, p.Sign("rsa-1", claims(jwt.MapClaims{"role": nil})), auth.Identity{Buyer: "42"}, true},
		{"an unlisted role: a buyer", v, p.Sign("rsa-1", claims(jwt.MapClaims{"role": "root"})), auth.Identity{Buyer: "42"}, true},
		{"a listed admin role", v, p.Sign("rsa-1", claims(jwt.MapClaims{"role": []string{"offline_access", "seckill-admin"}})), auth.Identity{Buyer: "42", Admin: true}, true},
		{"a listed service role", v, p.Sign("rsa-1", claims(jwt.MapClaims{"role": "shop-backend"})), auth.Identity{Buyer: "42", Service: true}, true},
		{"admin and service listed: admin", v, p.Sign("rsa-1", claims(jwt.MapClaims{"role": []string{"shop-backend", "admin"}})), auth.Identity{Buyer: "42", Admin: true}, true},
		{"the provider's admin, not listed", unlisted, p.Sign("rsa-1", claims(jwt.MapClaims{"role": "admin"})), auth.Identity{Buyer: "42"}, true},
		{"the provider's service, not listed", unlisted, p.Sign("rsa-1", claims(jwt.MapClaims{"role": []string{"service"}})), auth.Identity{Buyer: "42"}, true},
		{"a role claim of another type: a buyer", v, p.Sign("rsa-1", claims(jwt.MapClaims{"role": 7})), auth.Identity{Buyer: "42"}, true},
		// Leeway: 30 s on exp and nbf.
		{"expired within the leeway", v, p.Sign("rsa-1", claims(jwt.MapClaims{"exp": now.Add(-10 * time.Second).Unix()})), auth.Identity{Buyer: "42"}, true},
		{"not yet valid within the leeway", v, p.Sign("rsa-1", claims(jwt.MapClaims{"nbf": now.Add(10 * time.Second).Unix()})), auth.Identity{Buyer: "42"}, true},
		{"not yet valid past the leeway", v, p.Sign("rsa-1", claims(jwt.MapClaims{"nbf": now.Add(time.Minute).Unix()})), auth.Identity{}, false},
		{"expired, without leeway", unlisted, p.Sign("rsa-1", claims(jwt.MapClaims{"exp": now.Add(-time.Second).Unix()})), auth.Identity{}, false},
		{"the settings' claims missing", custom, p.Sign("rsa-1", claims(nil)), auth.Identity{}, false},
		// Alg confusion: an HS256 token keyed with the RSA public key is checked with our
		// secret, never with a key of the set.
		{"HS256 keyed with the public key", v, p.SignWith("rsa-1", jwt.SigningMethodHS256, publicPEM, claims(nil)), auth.Identity{}, false},
		{"HS256 keyed with the key's DER", v, p.SignWith("rsa-1", jwt.SigningMethodHS256, der, claims(nil)), auth.Identity{}, false},
		{"ES256 naming an RSA key", v, p.SignWith("rsa-1", jwt.SigningMethodES256, mustECKey(t), claims(nil)), auth.Identity{}, false},
		{"RS256 naming an EC key", v, p.SignWith("ec-1", jwt.SigningMethodRS256, mustRSAKey(t), claims(nil)), auth.Identity{}, false},
		{"RS256 of a key published without alg", v, p.Sign("rsa-bare", claims(nil)), auth.Identity{Buyer: "42"}, true},
		{"ES256 of a key published without alg", v, p.Sign("ec-bare", claims(nil)), auth.Identity{Buyer: "42"}, true},
		{"ES256 naming an RSA key without alg", v, p.SignWith("rsa-bare", jwt.SigningMethodES256, mustECKey(t), claims(nil)), auth.Identity{}, false},
		{"RS256 naming an EC key without alg", v, p.SignWith("ec-bare", jwt.SigningMethodRS256, mustRSAKey(t), claims(nil)), auth.Identity{}, false},
		{"HS256 keyed with a bare key's public key", v, p.SignWith("rsa-bare", jwt.SigningMethodHS256, publicPEM, claims(nil)), auth.Identity{}, false},
		{"RS384", v, p.SignWith("rsa-1", jwt.SigningMethodRS384, mustRSAKey(t), claims(nil)), auth.Identity{}, false},
		{"a key not in the set", v, p.SignWith("rsa-1", jwt.SigningMethodRS256, mustRSAKey(t), claims(nil)), auth.Identity{}, false},
		{"unknown kid", v, p.SignWith("ghost", jwt.SigningMethodRS256, mustRSAKey(t), claims(nil)), auth.Identity{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.v.Verify(tt.token, now)
			if tt.ok && (err != nil || got != tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if !tt.ok && !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("got %+v, %v; want ErrInvalidToken", got, err)
			}
		})
	}
}

// Key rotation: a token of a new key fetches the set again, at most once per
// RefreshEvery; with the provider down, the keys fetched last keep working and tokens of
// other keys are refused at once.
func TestIdPRotationAndOutage(t *testing.T) {
	p := testutil.StartIdP(t)
	p.AddKey("k1", "RS256")
	const every = 5 * time.Second // above the 2 s a request waits for a fetch
	v := newIdPVerifier(t, p, auth.IdPConfig{RefreshEvery: every})
	now := time.Now()
	user := func(kid string, id int) string {
		return p.Sign(kid, jwt.MapClaims{"sub": fmt.Sprint(id), "role": "user", "exp": now.Add(time.Hour).Unix()})
	}
	verify := func(token string, want int64) {
		t.Helper()
		got, err := v.Verify(token, now)
		switch {
		case want > 0 && (err != nil || got.Buyer != buyer.Of(want)):
			t.Errorf("got %+v, %v; want user %d", got, err, want)
		case want == 0 && !errors.Is(err, auth.ErrInvalidToken):
			t.Errorf("got %+v, %v; want ErrInvalidToken", got, err)
		}
	}
	verify(user("k1", 1), 1)
	if got := p.Fetches(); got != 1 {
		t.Fatalf("%d fetches of the key set at start, want 1", got)
	}

	// The behaviour under test: the fetch limit's interval passes, so an unknown kid may fetch
	// the set again.
	time.Sleep(every)
	p.AddKey("k2", "ES256")
	verify(user("k2", 2), 2) // an unknown kid: the set is fetched again, and has it
	if got := p.Fetches(); got != 2 {
		t.Errorf("%d fetches after a new kid, want 2", got)
	}
	// A third key at once: its tokens are refused until the limit allows a fetch.
	p.AddKey("k3", "RS256")
	for i := range 20 {
		verify(user("k3", 100+i), 0)
	}
	if got := p.Fetches(); got != 2 {
		t.Errorf("%d fetches after 20 tokens of an unknown kid within %v, want still 2", got, every)
	}
	// The fetch limit's interval passes (the behaviour under test).
	time.Sleep(every)
	verify(user("k3", 3), 3)
	if got := p.Fetches(); got != 3 {
		t.Errorf("%d fetches, want 3", got)
	}

	// The provider stops: new tokens of the keys fetched last still pass (each a new
	// token, not one the cache remembers); a kid never fetched is refused, quickly.
	p.Stop()
	p.AddKey("k4", "ES256")
	// The fetch limit's interval passes (the behaviour under test).
	time.Sleep(every)
	verify(user("k1", 11), 11)
	verify(user("k2", 12), 12)
	start := time.Now()
	verify(user("k4", 14), 0)
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("a token of an unknown kid with the provider down waited %v", waited)
	}
	// Back up: the next unknown kid (once the limit allows) fetches the set again.
	p.Start()
	// The fetch limit's interval passes (the behaviour under test).
	time.Sleep(every)
	verify(user("k4", 4), 4)
	// A key withdrawn from the set stops being trusted once the set is fetched again.
	p.RemoveKey("k1")
	p.AddKey("k5", "RS256")
	// The fetch limit's interval passes (the behaviour under test).
	time.Sleep(every)
	verify(user("k5", 5), 5) // fetches the set without k1
	verify(user("k1", 21), 0)
}

func mustRSAKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
