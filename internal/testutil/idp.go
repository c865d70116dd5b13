package testutil

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// IdP is a shop's identity provider for tests: it publishes a JWK Set over HTTP at URL,
// signs tokens with its keys, rotates them, and can be stopped and started again on the
// same address.
type IdP struct {
	t *testing.T
	// URL is the JWK Set's address.
	URL  string
	addr string

	mu      sync.Mutex
	keys    map[string]idpKey
	set     *jwkset.MemoryJWKSet
	srv     *http.Server
	fetches atomic.Int64
}

type idpKey struct {
	private crypto.Signer
	method  jwt.SigningMethod
}

// StartIdP starts an identity provider with no keys; AddKey gives it some. It stops at
// cleanup.
func StartIdP(t *testing.T) *IdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &IdP{t: t, addr: ln.Addr().String(), keys: map[string]idpKey{}, set: jwkset.NewMemoryStorage()}
	p.URL = "http://" + p.addr + "/.well-known/jwks.json"
	p.serve(ln)
	t.Cleanup(p.Stop)
	return p
}

func (p *IdP) serve(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		p.mu.Lock()
		body, err := p.set.JSONPublic(r.Context())
		p.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	srv := &http.Server{Handler: mux}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// AddKey makes a key for alg (RS256 or ES256) named kid and publishes it, with its
// alg.
func (p *IdP) AddKey(kid string, alg string) {
	p.t.Helper()
	p.addKey(kid, alg, true)
}

// AddKeyWithoutAlg is AddKey publishing the key without its alg, as many providers do.
func (p *IdP) AddKeyWithoutAlg(kid string, alg string) {
	p.t.Helper()
	p.addKey(kid, alg, false)
}

func (p *IdP) addKey(kid string, alg string, publishAlg bool) {
	p.t.Helper()
	var k idpKey
	var err error
	var jalg jwkset.ALG
	switch alg {
	case "RS256":
		k.private, err = rsa.GenerateKey(rand.Reader, 2048)
		k.method, jalg = jwt.SigningMethodRS256, jwkset.AlgRS256
	case "ES256":
		k.private, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		k.method, jalg = jwt.SigningMethodES256, jwkset.AlgES256
	default:
		p.t.Fatalf("IdP: no keys for %s", alg)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	if !publishAlg {
		jalg = ""
	}
	jwk, err := jwkset.NewJWKFromKey(k.private, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
		KID: kid, ALG: jalg, USE: jwkset.UseSig}})
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.set.KeyWrite(context.Background(), jwk); err != nil {
		p.t.Fatal(err)
	}
	p.keys[kid] = k
}

// RemoveKey withdraws a key from the published set; the IdP can still sign with it.
func (p *IdP) RemoveKey(kid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.set.KeyDelete(context.Background(), kid)
}

// PublicKey returns the public half of a key.
func (p *IdP) PublicKey(kid string) crypto.PublicKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[kid].private.Public()
}

// Sign returns a token of claims signed with the key kid, with kid in its header.
func (p *IdP) Sign(kid string, claims jwt.MapClaims) string {
	p.t.Helper()
	p.mu.Lock()
	k, ok := p.keys[kid]
	p.mu.Unlock()
	if !ok {
		p.t.Fatalf("IdP: no key %q", kid)
	}
	return p.SignWith(kid, k.method, k.private, claims)
}

// SignWith returns a token of claims signed by method with key, naming kid in its
// header: a token the IdP's keys may not fit.
func (p *IdP) SignWith(kid string, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	p.t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// Fetches is how many times the key set was fetched.
func (p *IdP) Fetches() int64 { return p.fetches.Load() }

// Stop stops answering: connections to its address are refused.
func (p *IdP) Stop() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Start answers again on the same address.
func (p *IdP) Start() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("IdP: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}
