package auth

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// viaLibrary is verifyOwn as jwt.ParseWithClaims does it, whole: the reference.
func viaLibrary(secret []byte, token string, now time.Time) (Identity, time.Time, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return Identity{}, time.Time{}, err
	}
	ident, err := identityOfClaims(c.Subject, c.Role)
	return ident, c.ExpiresAt.Time, err
}

// Verify's own path (algOf, then verifyOwn) accepts exactly the tokens jwt.ParseWithClaims
// accepts, with the same identity and expiry: tokens signed with every kind of claims, and
// every one-character change of a good token.
func TestVerifyAgreesWithTheLibrary(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	v := NewVerifier(string(secret), nil)
	signed := func(header, claims string) string {
		enc := base64.RawURLEncoding
		s := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
		sig, err := jwt.SigningMethodHS256.Sign(s, secret)
		if err != nil {
			t.Fatal(err)
		}
		return s + "." + enc.EncodeToString(sig)
	}
	own := `{"alg":"HS256","typ":"JWT"}`
	exp, past := now.Add(time.Hour).Unix(), now.Add(-time.Second).Unix()
	good, err := SignRole(string(secret), "42", RoleUser, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(good, ownHeader) {
		t.Errorf("Sign's header is not ownHeader: %s", good)
	}
	tokens := []string{good}
	for _, c := range []string{
		`{"sub":"42","role":"user","exp":` + itoa(exp) + `}`,
		`{"sub":"42","role":"admin","exp":` + itoa(exp) + `.5}`,
		`{"sub":"42","role":"service","exp":` + itoa(exp) + `,"nbf":` + itoa(exp) + `}`,
		`{"sub":"42","role":"user","exp":` + itoa(exp) + `,"nbf":` + itoa(past) + `}`,
		`{"sub":"42","role":"user","exp":` + itoa(exp) + `,"iat":` + itoa(exp+3600) + `}`,
		`{"sub":"42","role":"user","exp":` + itoa(past) + `}`,
		`{"sub":"42","role":"user","exp":"` + itoa(exp) + `"}`,
		`{"sub":"42","role":"user","exp":null}`,
		`{"sub":"42","role":"user"}`,
		`{"sub":42,"role":"user","exp":` + itoa(exp) + `}`,
		`{"sub":"042","role":"user","exp":` + itoa(exp) + `}`,
		`{"sub":"-1","role":"user","exp":` + itoa(exp) + `}`,
		`{"sub":"auth0|64f1c2","role":"user","exp":` + itoa(exp) + `}`,
		`{"sub":"","role":"user","exp":` + itoa(exp) + `}`,
		`{"sub":"a\u0000b","role":"user","exp":` + itoa(exp) + `}`,
		`{"sub":"\ud800","role":"user","exp":` + itoa(exp) + `}`,
		`{"role":"user","exp":` + itoa(exp) + `}`,
		`{"sub":"42","role":"root","exp":` + itoa(exp) + `}`,
		`{"sub":"42","role":"user","exp":` + itoa(exp) + `,"aud":["shop"],"iss":"x","jti":"1"}`,
		`{"sub":"42","role":"user","exp":` + itoa(exp) + `,"aud":7}`,
		`{"sub":"42","role":"user","exp":` + itoa(past) + `,"exp":` + itoa(exp) + `}`,
		`{"sub":"42","role":"user","exp":` + itoa(exp) + `,"role":"admin"}`,
		`{"sub":"42","role":"user","exp":` + itoa(exp) + `} x`,
		`["sub"]`, `null`, ``, `{`,
		// the shape Sign writes (ownClaims), and its near misses
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `,"iat":` + itoa(past) + `}`,
		`{"role":"admin","sub":"auth0|64f1c2","exp":` + itoa(exp) + `,"iat":` + itoa(exp+3600) + `}`,
		`{"role":"user","sub":"42","exp":` + itoa(past) + `,"iat":` + itoa(past) + `}`,
		`{"role":"user","sub":"42","exp":` + itoa(now.Unix()) + `,"iat":` + itoa(past) + `}`,
		`{"role":"root","sub":"42","exp":` + itoa(exp) + `,"iat":1}`,
		`{"role":"user","sub":"","exp":` + itoa(exp) + `,"iat":1}`,
		`{"role":"user","sub":"\u0034\u0032","exp":` + itoa(exp) + `,"iat":1}`,
		`{"role":"user","sub":"4\"2","exp":` + itoa(exp) + `,"iat":1}`,
		`{"role":"user","sub":"café","exp":` + itoa(exp) + `,"iat":1}`,
		`{"role":"user","sub":"a` + "\x01" + `b","exp":` + itoa(exp) + `,"iat":1}`,
		`{"role":"user","sub":"42","exp":0` + itoa(exp) + `,"iat":1}`,
		`{"role":"user","sub":"42","exp":-` + itoa(exp) + `,"iat":1}`,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `.25,"iat":1}`,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `e0,"iat":1}`,
		`{"role":"user","sub":"42","exp":9999999999999999,"iat":1}`,
		`{"role":"user","sub":"42","exp":999999999999999,"iat":1}`,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `,"iat":0}`,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `,"iat":01}`,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `,"iat":}`,
		`{"role":"user","sub":"42","exp":,"iat":1}`,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `,"iat":1} `,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `,"iat":1,"role":"admin"}`,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `,"iat":1}}`,
		`{"role":"user","sub":"42","exp":` + itoa(exp) + `}`,
		`{"role": "user","sub":"42","exp":` + itoa(exp) + `,"iat":1}`,
	} {
		for _, h := range []string{own, `{"typ":"JWT","alg":"HS256"}`, `{"alg":"HS256"}`, `{"alg":"HS512","typ":"JWT"}`,
			`{"alg":"none"}`, `{"alg":"RS256"}`, `{}`, `not json`} {
			tokens = append(tokens, signed(h, c))
		}
	}
	for i := range len(good) { // every one-character change of a good token
		for _, b := range []byte{'A', 'x', '-', '_', '.', '=', '+'} {
			if good[i] != b {
				tokens = append(tokens, good[:i]+string(b)+good[i+1:])
			}
		}
	}
	tokens = append(tokens, good+".", good+"x", "."+good, strings.TrimSuffix(good, good[len(good)-1:]), "a.b", "..", "")

	agreed, read := 0, 0
	for _, tok := range tokens {
		if c, ok := ownClaims(payloadOf(tok)); ok { // read as encoding/json reads it
			read++
			var want claims
			if err := json.Unmarshal(payloadOf(tok), &want); err != nil || c.role != want.Role || c.sub != want.Subject ||
				want.ExpiresAt == nil || c.exp != want.ExpiresAt.Unix() || want.IssuedAt == nil || c.iat != want.IssuedAt.Unix() ||
				!time.Unix(c.exp, 0).Equal(want.ExpiresAt.Time) || !time.Unix(c.iat, 0).Equal(want.IssuedAt.Time) {
				t.Errorf("%q: ownClaims read %+v, encoding/json %+v (%v)", tok, c, want, err)
			}
		}
		var id Identity
		var until time.Time
		var err error
		if alg := algOf(tok); alg == jwt.SigningMethodHS256.Alg() {
			id, until, err = v.verifyOwn(tok, now)
		} else {
			err = ErrInvalidToken // Verify refuses it before verifyOwn
		}
		wantID, wantUntil, wantErr := viaLibrary(secret, tok, now)
		switch {
		case (err == nil) != (wantErr == nil):
			t.Errorf("%q: own %v, library %v", tok, err, wantErr)
		case err == nil && (id != wantID || !until.Equal(wantUntil)):
			t.Errorf("%q: own %+v until %v, library %+v until %v", tok, id, until, wantID, wantUntil)
		case err == nil:
			agreed++
		}
	}
	if read < 8 {
		t.Errorf("ownClaims read only %d tokens: the test lost the shape Sign writes", read)
	}
	if agreed < 8 {
		t.Errorf("only %d of %d tokens accepted by both: the test lost its good tokens", agreed, len(tokens))
	}
}

// payloadOf is the decoded claims of a token, nil when it has none.
func payloadOf(token string) []byte {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	return b
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
