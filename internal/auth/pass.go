package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/buyer"
)

// ErrInvalidPass is a sale pass that is malformed, wrongly signed, expired, or made
// out to another buyer or another sale.
var ErrInvalidPass = errors.New("invalid sale pass")

// DeriveKey returns a key of its own for one purpose (the sale pass, the waiting room's
// proof-of-work), derived from the JWT secret: HMAC-SHA256(secret, "seckill/"+purpose).
// A token signed for one purpose never verifies for another, and the one secret every
// instance shares (SECKILL_JWT_SECRET) is the only one to configure and rotate.
func DeriveKey(secret, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("seckill/" + purpose))
	return m.Sum(nil)
}

// passClaims are a pass's claims: sub is the buyer's subject, sale the activity id.
type passClaims struct {
	Sale int64 `json:"sale"`
	jwt.RegisteredClaims
}

// Passes signs and checks the waiting room's sale passes: HS256 JWTs under a key derived
// from the JWT secret (DeriveKey "sale-pass"), naming the buyer, the sale and the expiry.
// Any instance that shares the secret verifies a pass another signed, without a
// storage call.
// Passes it has verified are remembered until they expire (as the Verifier does for
// bearer tokens), so a buyer's repeated purchases skip the signature and JSON work.
type Passes struct {
	key []byte

	cache sync.Map // pass -> checkedPass
	size  atomic.Int64
}

type checkedPass struct {
	buyer buyer.ID
	sale  int64
	exp   time.Time
}

// NewPasses returns Passes keyed from the JWT secret.
func NewPasses(secret string) *Passes { return &Passes{key: DeriveKey(secret, "sale-pass")} }

// Sign returns the pass of the buyer for activityID, valid until expires. The same
// arguments give the same pass.
func (p *Passes) Sign(b buyer.ID, activityID int64, expires time.Time) (string, error) {
	c := passClaims{Sale: activityID, RegisteredClaims: jwt.RegisteredClaims{
		Subject: string(b), ExpiresAt: jwt.NewNumericDate(expires)}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(p.key)
}

// Verify checks that pass is valid at now for the buyer in activityID and returns when
// it expires, or an error wrapping ErrInvalidPass that says what is wrong.
func (p *Passes) Verify(pass string, b buyer.ID, activityID int64, now time.Time) (time.Time, error) {
	exp, err := p.Check(pass, b, activityID)
	if err == nil && !now.Before(exp) {
		err = fmt.Errorf("%w: the pass has expired", ErrInvalidPass)
	}
	return exp, err
}

// Check is Verify without the expiry: it checks the signature and that the pass names
// the buyer and activityID, and returns when it expires, for a caller that judges the
// expiry by another clock (the purchase path: Redis', the one of every instance).
func (p *Passes) Check(pass string, b buyer.ID, activityID int64) (time.Time, error) {
	if v, ok := p.cache.Load(pass); ok {
		c := v.(checkedPass)
		return c.exp, c.check(b, activityID)
	}
	var c passClaims
	// The expiry is checked by the caller: here it must only be present.
	_, err := jwt.ParseWithClaims(pass, &c, func(*jwt.Token) (any, error) { return p.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithoutClaimsValidation())
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: the pass is malformed or not signed by this service", ErrInvalidPass)
	}
	holder, err := buyer.Parse(c.Subject)
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("%w: sub is not a buyer", ErrInvalidPass)
	case c.ExpiresAt == nil:
		return time.Time{}, fmt.Errorf("%w: no expiry", ErrInvalidPass)
	}
	checked := checkedPass{buyer: holder, sale: c.Sale, exp: c.ExpiresAt.Time}
	if p.size.Add(1) > maxCached {
		p.cache.Clear()
		p.size.Store(1)
	}
	p.cache.Store(pass, checked)
	return checked.exp, checked.check(b, activityID)
}

// check tells whether a pass whose signature was verified names the buyer and activityID.
func (c checkedPass) check(b buyer.ID, activityID int64) error {
	switch {
	case c.buyer != b:
		return fmt.Errorf("%w: the pass is another buyer's", ErrInvalidPass)
	case c.sale != activityID:
		return fmt.Errorf("%w: the pass is for another sale", ErrInvalidPass)
	}
	return nil
}
