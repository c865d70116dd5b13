// Package buyer is who buys: the subject of a token exactly as the shop's identity
// provider signed it (docs/internals/redis-data.md, "Buyers").
// A buyer is one ID from the token to the row; Redis names it by its key (Key), MySQL
// by its bytes, and the API by the subject and, for a decimal subject, its number.
package buyer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ID is a buyer: a subject of 1 to MaxLen bytes of UTF-8 without a control character.
// Two IDs are one buyer when their bytes are equal.
type ID string

// MaxLen is the longest subject in bytes.
const MaxLen = 255

// ErrInvalid is a subject that names no buyer, or a key that is no buyer's.
var ErrInvalid = errors.New("invalid buyer")

// Parse returns the buyer a subject names: the subject itself, when it is 1 to MaxLen
// bytes of valid UTF-8 without a control character (unicode.IsControl).
func Parse(subject string) (ID, error) {
	switch {
	case subject == "":
		return "", fmt.Errorf("%w: the subject is empty", ErrInvalid)
	case len(subject) > MaxLen:
		return "", fmt.Errorf("%w: the subject is longer than %d bytes", ErrInvalid, MaxLen)
	case !utf8.ValidString(subject):
		return "", fmt.Errorf("%w: the subject is not UTF-8", ErrInvalid)
	case strings.ContainsFunc(subject, unicode.IsControl):
		return "", fmt.Errorf("%w: the subject holds a control character", ErrInvalid)
	}
	return ID(subject), nil
}

// Of returns the buyer of a decimal user id (1 or more): the subject its token carries.
func Of(userID int64) ID { return ID(strconv.FormatInt(userID, 10)) }

// UserID returns the number of a decimal buyer: a subject that is the canonical decimal
// (no sign, no leading zero) of a number in 1..2^63-1. false for any other.
func (id ID) UserID() (int64, bool) {
	if !decimal(string(id)) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return n, err == nil
}

// maxDecimal is 2^63-1, the largest user id.
const maxDecimal = "9223372036854775807"

// decimal reports whether s is the canonical decimal of a number in 1..2^63-1.
func decimal(s string) bool {
	if len(s) == 0 || len(s) > len(maxDecimal) || s[0] < '1' || s[0] > '9' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) < len(maxDecimal) || s <= maxDecimal // same length: bytes compare as numbers
}

// keyMark begins the key of a buyer that is not decimal; a decimal's key begins with a
// digit, so the first byte tells the two apart.
const keyMark = '~'

// keyEscapes writes the two bytes a key may not hold as they are: the space (the
// separator of the values that carry a key) and the escape's own '%'.
var keyEscapes = strings.NewReplacer("%", "%25", " ", "%20")

// Key is the buyer's name in Redis key names, hash fields and values: a decimal buyer's
// subject itself, so that its keys are the decimal user id's; any other is '~' then the
// subject with '%' and the space written "%25" and "%20". A key is never empty, holds no
// space and no control character, and two buyers never have one key.
func (id ID) Key() string {
	if decimal(string(id)) {
		return string(id)
	}
	if !strings.ContainsAny(string(id), "% ") {
		return string(keyMark) + string(id)
	}
	return string(keyMark) + keyEscapes.Replace(string(id))
}

// FromKey returns the buyer whose Key is key, or an error wrapping ErrInvalid when key
// is no buyer's key.
func FromKey(key string) (ID, error) {
	if decimal(key) {
		return ID(key), nil
	}
	escaped, ok := strings.CutPrefix(key, string(keyMark))
	if !ok {
		return "", fmt.Errorf("%w: key %q", ErrInvalid, key)
	}
	subject, ok := unescape(escaped)
	if !ok {
		return "", fmt.Errorf("%w: key %q", ErrInvalid, key)
	}
	id, err := Parse(subject)
	if err != nil || decimal(subject) { // a decimal's key is the decimal
		return "", fmt.Errorf("%w: key %q", ErrInvalid, key)
	}
	return id, nil
}

// unescape is the subject of a key's escaped part: false when it holds a space, or a
// '%' that does not begin "%20" or "%25" (no key has either).
func unescape(s string) (string, bool) {
	if strings.IndexByte(s, ' ') >= 0 {
		return "", false
	}
	if strings.IndexByte(s, '%') < 0 {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "%20"):
			b.WriteByte(' ')
		case strings.HasPrefix(s[i:], "%25"):
			b.WriteByte('%')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// Named is how an object of the API names its buyer: "buyer", the subject exactly as
// signed, and "user_id", its number, only for a decimal buyer (absent otherwise).
type Named struct {
	Buyer  ID    `json:"buyer"`
	UserID int64 `json:"user_id,omitempty"`
}

// Named returns the fields that name the buyer in an object of the API.
func (id ID) Named() Named {
	n, _ := id.UserID()
	return Named{Buyer: id, UserID: n}
}
