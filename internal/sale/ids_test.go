package sale_test

import (
	"testing"

	"seckill/internal/sale"
)

// An activity id has one spelling, and an order id is taken only exactly as issued.
func TestCanonicalIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true}, {"42", 42, true}, {"9223372036854775807", 9223372036854775807, true},
		{"", 0, false}, {"0", 0, false}, {"01", 0, false}, {"+1", 0, false}, {"-1", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"1e3", 0, false}, {"0x1", 0, false}, {"1_0", 0, false},
		{"9223372036854775808", 0, false}, {"99999999999999999999", 0, false},
	} {
		if got, ok := sale.ParseID(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("ParseID(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	const stamp = "01J9ZQ4X5V6W7Y8Z9ABCDEFGHJ"
	for _, tc := range []struct {
		id   string
		want int64
		ok   bool
	}{
		{stamp + "42", 42, true},
		{"01j9zq4x5v6w7y8z9abcdefghj42", 0, false}, // lower case: not as issued
		{"01J9ZQ4X5V6W7Y8Z9ABCDEFGHj42", 0, false},
		{stamp + "042", 0, false},
		{stamp + "+42", 0, false},
		{stamp, 0, false},
		{"81J9ZQ4X5V6W7Y8Z9ABCDEFGHJ42", 0, false}, // past the largest ULID
	} {
		if got, ok := sale.ActivityOf(tc.id); got != tc.want || ok != tc.ok {
			t.Errorf("ActivityOf(%q) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}
