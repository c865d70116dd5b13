// Package accesscode keeps a sale's access codes, for early access: the shop's own
// codes imported in bulk, or codes made here (random, without look-alike characters),
// listed with the buyer who owns each, and revoked one by one.
//
// Where each fact lives: MySQL (table access_codes) is where a code exists or is
// revoked, and what the lists and counts read. Who owns a code is decided in Redis, in
// the sale's slot, by the script a buyer presents it to (the reserve script of a
// purchase, the line's join: internal/stock, codes.go), so that the first buyer who
// presents it owns it, atomically with what it lets them do; the worker records each
// owner in MySQL within a second (Record), and the archive once more before a sale's
// keys go. A rebuild of a sale from MySQL writes its codes back (Restore) before the
// sale reopens, without undoing an owner Redis still has.
package accesscode

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
)

// Bounds of codes.
const (
	// MinLength and MaxLength bound an imported code, in bytes; MaxLength also bounds
	// a code presented.
	MinLength = 4
	MaxLength = 64
	// MaxPerCall is the most codes one call imports or generates.
	MaxPerCall = 100_000
)

// Errors of codes. The handler maps them to the HTTP contract.
var (
	// ErrMalformed is a code presented (X-Access-Code) that no code can be: over
	// MaxLength bytes, or holding a control character.
	ErrMalformed = errors.New("X-Access-Code must be at most 64 bytes without control characters")
	// ErrNoCode is a code the sale never had.
	ErrNoCode = errors.New("the sale has no such access code")
	// ErrSeveralBuckets is a code for a sale of several stock buckets, which has no
	// early access (a code is owned in one Redis slot, each buyer of such a sale buys
	// in a slot of their own).
	ErrSeveralBuckets = errors.New("access codes are for a sale of one stock bucket: a sale of several buckets has no early access")
)

// FieldError is a request value out of range, named by its JSON field.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Message }

// CheckPresented checks a code as a buyer presents it (the header X-Access-Code):
// ErrMalformed for one over MaxLength bytes or with a control character. Any other is
// looked up, and is unknown if the sale never had it.
func CheckPresented(code string) error {
	if len(code) > MaxLength || strings.IndexFunc(code, isControl) >= 0 {
		return ErrMalformed
	}
	return nil
}

// isControl reports the control characters, ASCII's and Unicode's (C0, DEL, C1).
func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 }

// checkImported checks a code the shop imports: MinLength to MaxLength bytes, each a
// printable ASCII character (space to ~), neither the first nor the last a space, so
// that it travels unchanged in a header (which drops the spaces around its value), a
// CSV and a URL's path (escaped), and a buyer can type it.
func checkImported(code string) bool {
	if len(code) < MinLength || len(code) > MaxLength || code[0] == ' ' || code[len(code)-1] == ' ' {
		return false
	}
	for i := range len(code) {
		if code[i] < ' ' || code[i] > '~' {
			return false
		}
	}
	return true
}

// alphabet is the characters of a generated code: the digits and capital letters
// without those read for another (0 and O, 1, I and L). 31 of them: each gives
// log2(31), about 4.95 bits.
const alphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"

// generatedLength is a generated code's length: 13 characters of alphabet hold 64.4
// random bits (at least 60).
const generatedLength = 13

// generate returns n new codes, each drawn uniformly from crypto/rand.
func generate(n int) ([]string, error) {
	out := make([]string, n)
	buf := make([]byte, 64)
	var pool []byte // random bytes not yet used
	for i := range out {
		var b strings.Builder
		b.Grow(generatedLength)
		for b.Len() < generatedLength {
			if len(pool) == 0 {
				if _, err := rand.Read(buf); err != nil {
					return nil, fmt.Errorf("generate access codes: %w", err)
				}
				pool = buf
			}
			c := pool[0]
			pool = pool[1:]
			if c >= 248 { // 248 = 8 * 31: above it a draw would favour the first characters
				continue
			}
			b.WriteByte(alphabet[int(c)%len(alphabet)])
		}
		out[i] = b.String()
	}
	return out, nil
}
