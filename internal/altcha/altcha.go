// Package altcha is the server side of ALTCHA's proof-of-work: it makes challenges in
// the format of the ALTCHA widget and its libraries (algorithm SHA-256, the challenge
// the hex SHA-256 of salt + a secret number up to maxnumber, signed with HMAC-SHA256)
// and checks the widget's solutions. Its own parameters ride in the salt, as the
// libraries do (salt?expires=<unix>&...), so they are covered by the challenge's hash.
// Accepting each solution once is the caller's part (it has the storage).
package altcha

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Algorithm is the only hash this package makes and accepts.
const Algorithm = "SHA-256"

// ErrInvalid is a solution that is malformed, of another algorithm, wrongly signed,
// wrong, or past its expiry.
var ErrInvalid = errors.New("invalid proof-of-work")

// Challenge is what the widget fetches and solves.
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int64  `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Solution is what the widget sends back, base64 of its JSON.
type Solution struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	Number    int64  `json:"number"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
	// Params are the parameters of the salt (expires and the caller's own).
	Params url.Values `json:"-"`
	// Expires is when the challenge stops being accepted.
	Expires time.Time `json:"-"`
}

// Issuer makes and checks challenges under one HMAC key.
type Issuer struct {
	key []byte
}

// New returns an Issuer signing with key (internal/auth.DeriveKey).
func New(key []byte) *Issuer { return &Issuer{key: key} }

// Create returns a challenge whose secret number is drawn uniformly from 0..maxNumber,
// accepted until expires, carrying params in its salt.
func (i *Issuer) Create(maxNumber int64, expires time.Time, params url.Values) (Challenge, error) {
	if maxNumber < 1 {
		return Challenge{}, fmt.Errorf("altcha: maxnumber %d", maxNumber)
	}
	random := make([]byte, 12)
	if _, err := rand.Read(random); err != nil {
		return Challenge{}, err
	}
	n, err := rand.Int(rand.Reader, big.NewInt(maxNumber+1))
	if err != nil {
		return Challenge{}, err
	}
	q := url.Values{}
	for k, v := range params {
		q[k] = v
	}
	q.Set("expires", strconv.FormatInt(expires.Unix(), 10))
	salt := hex.EncodeToString(random) + "?" + q.Encode()
	challenge := hashHex(salt + strconv.FormatInt(n.Int64(), 10))
	return Challenge{Algorithm: Algorithm, Challenge: challenge, MaxNumber: maxNumber, Salt: salt,
		Signature: i.sign(challenge)}, nil
}

// Verify checks a solution the widget sent (base64 of its JSON) at now and returns it
// with its salt's parameters, or an error wrapping ErrInvalid.
func (i *Issuer) Verify(payload string, now time.Time) (Solution, error) {
	s, err := i.Check(payload)
	if err == nil && !now.Before(s.Expires) {
		return Solution{}, fmt.Errorf("%w: expired", ErrInvalid)
	}
	return s, err
}

// Check is Verify without the expiry: it checks that the solution is right and of a
// challenge of ours and returns it with its expiry, for a caller that judges the expiry
// by another clock (internal/waitingroom: Redis', the one of every instance).
func (i *Issuer) Check(payload string) (Solution, error) {
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return Solution{}, fmt.Errorf("%w: not base64", ErrInvalid)
	}
	var s Solution
	if err := json.Unmarshal(raw, &s); err != nil {
		return Solution{}, fmt.Errorf("%w: not the JSON of a solution", ErrInvalid)
	}
	_, query, _ := strings.Cut(s.Salt, "?")
	params, err := url.ParseQuery(query)
	if err != nil {
		return Solution{}, fmt.Errorf("%w: malformed salt", ErrInvalid)
	}
	expires, err := strconv.ParseInt(params.Get("expires"), 10, 64)
	switch {
	case s.Algorithm != Algorithm:
		return Solution{}, fmt.Errorf("%w: algorithm %q", ErrInvalid, s.Algorithm)
	case !hmac.Equal([]byte(i.sign(s.Challenge)), []byte(s.Signature)):
		return Solution{}, fmt.Errorf("%w: not a challenge of ours", ErrInvalid)
	case s.Number < 0 || hashHex(s.Salt+strconv.FormatInt(s.Number, 10)) != s.Challenge:
		return Solution{}, fmt.Errorf("%w: wrong number", ErrInvalid)
	case err != nil:
		return Solution{}, fmt.Errorf("%w: no expiry", ErrInvalid)
	}
	s.Params, s.Expires = params, time.Unix(expires, 0)
	return s, nil
}

func (i *Issuer) sign(challenge string) string {
	m := hmac.New(sha256.New, i.key)
	m.Write([]byte(challenge))
	return hex.EncodeToString(m.Sum(nil))
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Solve finds the number of a challenge by trying every one up to its maxnumber, as
// the widget does, and returns the payload the widget would send (tests, load tools).
func Solve(c Challenge) (string, error) {
	for n := int64(0); n <= c.MaxNumber; n++ {
		if hashHex(c.Salt+strconv.FormatInt(n, 10)) == c.Challenge {
			b, err := json.Marshal(Solution{Algorithm: c.Algorithm, Challenge: c.Challenge, Number: n,
				Salt: c.Salt, Signature: c.Signature})
			if err != nil {
				return "", err
			}
			return base64.StdEncoding.EncodeToString(b), nil
		}
	}
	return "", errors.New("altcha: no number up to maxnumber solves the challenge")
}
