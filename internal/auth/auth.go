// Package auth signs and checks the API's bearer tokens: HS256 JWTs whose sub names the
// buyer (any subject internal/buyer accepts) and whose role is "user", "admin" or
// "service"; exp is required. Beside them it accepts RS256 and ES256 tokens of a shop's identity provider,
// verified with the keys of its JWKS (idp.go).
package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/buyer"
)

// ErrInvalidToken is a missing, malformed, expired or wrongly signed token.
var ErrInvalidToken = errors.New("invalid token")

// Roles a token may carry.
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
	// RoleService is a shop's back end: it confirms payments and cancels orders of any
	// buyer, and is neither a buyer nor an admin.
	RoleService = "service"
)

// Identity is who a valid token speaks for: the buyer its subject names, in a role.
type Identity struct {
	Buyer   buyer.ID
	Admin   bool
	Service bool
}

type claims struct {
	Role string `json:"role"`
	jwt.RegisteredClaims
}

// Sign returns a token for the subject, a buyer (or an admin), valid for ttl from now.
func Sign(secret string, subject buyer.ID, admin bool, ttl time.Duration, now time.Time) (string, error) {
	role := RoleUser
	if admin {
		role = RoleAdmin
	}
	return SignRole(secret, subject, role, ttl, now)
}

// SignRole returns a token of the role for the subject, valid for ttl from now. A
// subject that names no buyer (buyer.Parse) is refused, as Verify would refuse its token.
func SignRole(secret string, subject buyer.ID, role string, ttl time.Duration, now time.Time) (string, error) {
	if _, err := identityOfClaims(string(subject), role); err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	c := claims{Role: role, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   string(subject),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
}

// Verifier checks tokens. Tokens it has verified are remembered until they expire, so
// a buyer's repeated requests skip the signature check and the JSON decoding.
type Verifier struct {
	secret []byte
	idp    *IdP      // nil: HS256 tokens only
	macs   sync.Pool // *keyedMAC, reset before each use

	cache sync.Map // token -> verified
	size  atomic.Int64
}

type verified struct {
	id  Identity
	exp time.Time
}

// maxCached bounds the remembered tokens; the cache is emptied when it is full.
const maxCached = 200_000

// NewVerifier returns a Verifier for tokens signed with secret (HS256) and, when idp is
// not nil, for the RS256 and ES256 tokens of that identity provider.
func NewVerifier(secret string, idp *IdP) *Verifier {
	v := &Verifier{secret: []byte(secret), idp: idp}
	v.macs.New = func() any { return &keyedMAC{mac: hmac.New(sha256.New, v.secret)} }
	return v
}

// keyedMAC is an HMAC-SHA256 keyed with the secret, and the bytes it last hashed: the
// token's signed part is copied there, not into a new slice per token.
type keyedMAC struct {
	mac    hash.Hash
	signed []byte
}

// Verified reports whether token is one Verify found valid and remembers, unexpired at
// now: a lookup, with no signature check.
func (v *Verifier) Verified(token string, now time.Time) bool {
	c, ok := v.cache.Load(token)
	return ok && now.Before(c.(verified).exp)
}

// Verify returns the identity of a valid token at time now, or an error wrapping
// ErrInvalidToken that says what is wrong. The token's alg picks the key: HS256 tokens
// are checked with the secret, RS256 and ES256 ones with the identity provider's keys
// (never the other way round); any other alg is refused.
func (v *Verifier) Verify(token string, now time.Time) (Identity, error) {
	if c, ok := v.cache.Load(token); ok {
		if c := c.(verified); now.Before(c.exp) {
			return c.id, nil
		}
		v.cache.Delete(token)
		return Identity{}, fmt.Errorf("%w: the token has expired", ErrInvalidToken)
	}
	var ident Identity
	var exp time.Time
	var err error
	switch alg := algOf(token); {
	case alg == jwt.SigningMethodHS256.Alg():
		ident, exp, err = v.verifyOwn(token, now)
	case v.idp != nil && v.idp.accepts(alg):
		ident, exp, err = v.idp.verify(token, now)
	default:
		return Identity{}, fmt.Errorf("%w: alg %q is not accepted", ErrInvalidToken, alg)
	}
	if err != nil {
		return Identity{}, err
	}
	if v.size.Add(1) > maxCached {
		v.cache.Clear()
		v.size.Store(1)
	}
	v.cache.Store(token, verified{id: ident, exp: exp})
	return ident, nil
}

// verifyOwn checks a token of ours: HS256 with the secret, sub and role. It does what
// jwt.ParseWithClaims does, with the library's claims validator, without decoding the
// header into a map once more (Verify read its alg, HS256) or the token into a
// jwt.Token: a token seen for the first time is every buyer's first request, and that
// decoding was half its cost. The signature is checked first, with a keyed HMAC taken
// from a pool (keying one is two of the hash's blocks); then the claims of the shape
// Sign writes are read by ownClaims and checked here, any others are read by
// encoding/json and checked by the library's validator.
// TestVerifyAgreesWithTheLibrary holds it to jwt.ParseWithClaims.
func (v *Verifier) verifyOwn(token string, now time.Time) (Identity, time.Time, error) {
	fail := func(why string, err error) (Identity, time.Time, error) {
		return Identity{}, time.Time{}, fmt.Errorf("%w: %s: %v", ErrInvalidToken, why, err)
	}
	signed, sig, ok := cutLast(token, ".")
	_, payload, ok2 := strings.Cut(signed, ".")
	if !ok || !ok2 || strings.Contains(payload, ".") {
		return fail("malformed", errors.New("a token has three dot-separated parts"))
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return fail("malformed signature", err)
	}
	if !v.signedBy(signed, raw) {
		return fail("signature", jwt.ErrSignatureInvalid)
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return fail("malformed claims", err)
	}
	if o, ok := ownClaims(body); ok {
		// What the library's validator asks of these claims: exp is required and a
		// whole second, there is no nbf, and iat is not checked.
		exp := time.Unix(o.exp, 0)
		if !now.Before(exp) {
			return fail("claims", jwt.ErrTokenExpired)
		}
		ident, err := identityOfClaims(o.sub, o.role)
		return ident, exp, err
	}
	var c claims
	if err := json.Unmarshal(body, &c); err != nil {
		return fail("malformed claims", err)
	}
	if err := jwt.NewValidator(jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return now })).
		Validate(c); err != nil {
		return fail("claims", err)
	}
	ident, err := identityOfClaims(c.Subject, c.Role)
	return ident, c.ExpiresAt.Time, err
}

// signedBy reports whether sig is the HMAC-SHA256 of signed with the secret, as
// jwt.SigningMethodHS256.Verify does.
func (v *Verifier) signedBy(signed string, sig []byte) bool {
	k := v.macs.Get().(*keyedMAC)
	defer v.macs.Put(k)
	k.mac.Reset()
	k.signed = append(k.signed[:0], signed...)
	_, _ = k.mac.Write(k.signed)
	var sum [sha256.Size]byte
	return hmac.Equal(sig, k.mac.Sum(sum[:0]))
}

// ownToken is the claims of a token of the shape Sign writes.
type ownToken struct {
	role, sub string
	exp, iat  int64 // Unix seconds
}

// ownClaims reads claims of exactly the shape Sign writes,
// {"role":"…","sub":"…","exp":N,"iat":N}: strings of printable ASCII without a quote or
// a backslash (JSON would read them byte for byte) and whole numbers of at most 15
// digits without a leading zero (exact in the float64 NumericDate reads). It answers
// false for anything else, which encoding/json then reads: what it reads, json.Unmarshal
// reads the same.
func ownClaims(body []byte) (ownToken, bool) {
	rest := string(body)
	field := func(head string, number bool) (string, bool) {
		if !strings.HasPrefix(rest, head) {
			return "", false
		}
		rest = rest[len(head):]
		i := 0
		for i < len(rest) && plain(rest[i], number) {
			i++
		}
		v := rest[:i]
		rest = rest[i:]
		if number && (v == "" || len(v) > 15 || (v[0] == '0' && len(v) > 1)) {
			return "", false
		}
		return v, true
	}
	role, ok1 := field(`{"role":"`, false)
	sub, ok2 := field(`","sub":"`, false)
	exp, ok3 := field(`","exp":`, true)
	iat, ok4 := field(`,"iat":`, true)
	if !ok1 || !ok2 || !ok3 || !ok4 || rest != "}" {
		return ownToken{}, false
	}
	e, err1 := strconv.ParseInt(exp, 10, 64)
	i, err2 := strconv.ParseInt(iat, 10, 64)
	if err1 != nil || err2 != nil {
		return ownToken{}, false
	}
	return ownToken{role: role, sub: sub, exp: e, iat: i}, true
}

// plain reports whether b is a digit (number) or a byte JSON keeps as it is in a
// string (printable ASCII but a quote or a backslash).
func plain(b byte, number bool) bool {
	if number {
		return b >= '0' && b <= '9'
	}
	return b >= 0x20 && b < 0x7f && b != '"' && b != '\\'
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// identityOfClaims is the identity of a token whose user claim is sub (a subject
// buyer.Parse accepts) and whose role claim is role.
func identityOfClaims(sub, role string) (Identity, error) {
	id, err := buyer.Parse(sub)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: the user claim: %w", ErrInvalidToken, err)
	}
	ident, ok := identityOf(id, role)
	if !ok {
		return Identity{}, fmt.Errorf("%w: role must be user, admin or service", ErrInvalidToken)
	}
	return ident, nil
}

// ownHeader is the header of the tokens Sign makes, encoded: a token that begins with it
// is HS256 without decoding it.
var ownHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "."

// algOf reads the alg of a token's header, "" if there is none to read.
func algOf(token string) string {
	if strings.HasPrefix(token, ownHeader) {
		return jwt.SigningMethodHS256.Alg()
	}
	head, _, ok := strings.Cut(token, ".")
	if !ok {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return ""
	}
	return h.Alg
}

// identityOf is the identity of a token of role for the buyer; false for an unknown role.
func identityOf(b buyer.ID, role string) (Identity, bool) {
	switch role {
	case RoleUser:
		return Identity{Buyer: b}, true
	case RoleAdmin:
		return Identity{Buyer: b, Admin: true}, true
	case RoleService:
		return Identity{Buyer: b, Service: true}, true
	}
	return Identity{}, false
}
