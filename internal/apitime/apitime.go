// Package apitime is how the service writes a time in its answers and its events: RFC
// 3339 in UTC with milliseconds, always three digits ("2026-11-26T21:20:42.740Z"), the
// precision MySQL (DATETIME(3)) and Redis (milliseconds) keep, so an event, an answer
// and a row read back show one instant alike.
package apitime

import (
	"fmt"
	"time"
)

// Layout is the format of every time the service writes.
const Layout = "2006-01-02T15:04:05.000Z07:00"

// Time is a time as answers and events show it: it marshals to JSON in Layout, and
// reads any RFC 3339 time.
type Time struct{ time.Time }

// Of returns t as answers and events show it: in UTC, truncated to the millisecond (as
// MySQL stores it).
func Of(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// OfPtr is Of for an optional time: nil for nil.
func OfPtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := Of(*t)
	return &v
}

// MarshalJSON writes t in Layout, in UTC, truncated to the millisecond; a year RFC 3339
// cannot write (before 0 or after 9999) is an error, as with time.Time.
func (t Time) MarshalJSON() ([]byte, error) {
	return t.AppendJSON(make([]byte, 0, len(Layout)+2))
}

// AppendJSON appends t as MarshalJSON writes it to b: Layout's digits written one by
// one, which costs a tenth of time.AppendFormat's reading of the layout (every answer
// to a purchase writes two times).
func (t Time) AppendJSON(b []byte) ([]byte, error) {
	u := t.UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		return nil, fmt.Errorf("apitime: year %d outside of [0,9999]", year)
	}
	hour, minute, sec := u.Clock()
	b = append(b, '"')
	b = digits(b, year, 4)
	b = digits(append(b, '-'), int(month), 2)
	b = digits(append(b, '-'), day, 2)
	b = digits(append(b, 'T'), hour, 2)
	b = digits(append(b, ':'), minute, 2)
	b = digits(append(b, ':'), sec, 2)
	b = digits(append(b, '.'), u.Nanosecond()/int(time.Millisecond), 3)
	return append(b, 'Z', '"'), nil
}

// digits appends n (0 <= n < 10^width, width at most 4) in width decimal digits, zeros
// first.
func digits(b []byte, n, width int) []byte {
	start := len(b)
	b = append(b, "0000"[:width]...)
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}
