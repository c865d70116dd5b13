package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Cursors sign the opaque cursors the API hands out (the next of a page of a sale's
// orders) with a key of their own (DeriveKey), so that a cursor the API did not issue,
// or issued for another listing, is refused without a storage call.
type Cursors struct{ key []byte }

// NewCursors returns the cursors signed with a key derived from the JWT secret: every
// instance reads every other's, and rotating the secret voids them.
func NewCursors(secret string) *Cursors { return &Cursors{key: DeriveKey(secret, "cursor")} }

// Issue returns a cursor holding position, valid for the listing named scope only.
func (c *Cursors) Issue(scope, position string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(position)) + "." + enc.EncodeToString(c.mac(scope, position))
}

// Open returns the position a cursor issued for scope holds; ok is false for anything
// else (another scope, a cursor altered or made up).
func (c *Cursors) Open(scope, cursor string) (position string, ok bool) {
	enc := base64.RawURLEncoding
	p, sig, found := strings.Cut(cursor, ".")
	raw, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(sig)
	if !found || err1 != nil || err2 != nil || !hmac.Equal(mac, c.mac(scope, string(raw))) {
		return "", false
	}
	return string(raw), true
}

// mac is the first 16 bytes of HMAC-SHA256 of scope and position.
func (c *Cursors) mac(scope, position string) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write([]byte(position))
	return m.Sum(nil)[:16]
}
