// Package auth signs and checks the API's bearer tokens: HS256 JWTs whose sub is the
// user id as a decimal string and whose role is "user", "admin" or "service"; exp is
// required.
package auth

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
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

// Identity is who a valid token speaks for.
type Identity struct {
	UserID  int64
	Admin   bool
	Service bool
}

type claims struct {
	Role string `json:"role"`
	jwt.RegisteredClaims
}

// Sign returns a token for the user (or an admin), valid for ttl from now.
func Sign(secret string, userID int64, admin bool, ttl time.Duration, now time.Time) (string, error) {
	role := RoleUser
	if admin {
		role = RoleAdmin
	}
	return SignRole(secret, userID, role, ttl, now)
}

// SignRole returns a token of the role for userID, valid for ttl from now.
func SignRole(secret string, userID int64, role string, ttl time.Duration, now time.Time) (string, error) {
	if _, ok := identityOf(userID, role); !ok {
		return "", fmt.Errorf("sign: unknown role %q", role)
	}
	c := claims{Role: role, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   strconv.FormatInt(userID, 10),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
}

// Verifier checks tokens. Tokens it has verified are remembered until they expire, so
// a buyer's repeated requests skip the signature check and the JSON decoding.
type Verifier struct {
	secret []byte

	cache sync.Map // token -> verified
	size  atomic.Int64
}

type verified struct {
	id  Identity
	exp time.Time
}

// maxCached bounds the remembered tokens; the cache is emptied when it is full.
const maxCached = 200_000

// NewVerifier returns a Verifier for tokens signed with secret.
func NewVerifier(secret string) *Verifier {
	return &Verifier{secret: []byte(secret)}
}

// Verify returns the identity of a valid token at time now, or an error wrapping
// ErrInvalidToken that says what is wrong.
func (v *Verifier) Verify(token string, now time.Time) (Identity, error) {
	if c, ok := v.cache.Load(token); ok {
		if c := c.(verified); now.Before(c.exp) {
			return c.id, nil
		}
		v.cache.Delete(token)
		return Identity{}, fmt.Errorf("%w: the token has expired", ErrInvalidToken)
	}
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return v.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	id, err := strconv.ParseInt(c.Subject, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != c.Subject {
		return Identity{}, fmt.Errorf("%w: sub must be a positive decimal user id", ErrInvalidToken)
	}
	ident, ok := identityOf(id, c.Role)
	if !ok {
		return Identity{}, fmt.Errorf("%w: role must be user, admin or service", ErrInvalidToken)
	}
	if v.size.Add(1) > maxCached {
		v.cache.Clear()
		v.size.Store(1)
	}
	v.cache.Store(token, verified{id: ident, exp: c.ExpiresAt.Time})
	return ident, nil
}

// identityOf is the identity of a token of role for userID; false for an unknown role.
func identityOf(userID int64, role string) (Identity, bool) {
	switch role {
	case RoleUser:
		return Identity{UserID: userID}, true
	case RoleAdmin:
		return Identity{UserID: userID, Admin: true}, true
	case RoleService:
		return Identity{UserID: userID, Service: true}, true
	}
	return Identity{}, false
}
