package stock

import (
	"errors"
	"fmt"
	"testing"
)

// Each reply code of the table has one Lua name, and decodeReserved answers it with its
// refusal's sentinel (an answer IsRefusal knows) when it comes with its code's values,
// and with an error that is no refusal when it comes with others or is not in the table.
func TestReplyCodes(t *testing.T) {
	codes, names := map[int]bool{}, map[string]bool{}
	for _, r := range reserveReplies {
		if codes[r.code] || names[r.lua] {
			t.Errorf("reply %d %s: code or name used twice", r.code, r.lua)
		}
		codes[r.code], names[r.lua] = true, true
	}
	r := Reservation{Purchase: Purchase{ActivityID: 1, Buyer: "2", Quantity: 1}, OrderID: "o"}
	for _, reply := range reserveReplies {
		t.Run(reply.lua, func(t *testing.T) {
			res := []any{int64(reply.code)}
			for i := range reply.values {
				res = append(res, fmt.Sprint(i+1)) // as Lua's strings, or order ids
			}
			got, err := decodeReserved(r, "", res, saleTerms{limit: 5})
			switch {
			case reply.err == nil && err != nil && reply.code != replyWrongBuckets:
				t.Errorf("%v: %+v %v, want an answer", res, got, err)
			case reply.err != nil && (!errors.Is(err, reply.err) || !IsRefusal(err)):
				t.Errorf("%v: %+v %v, want %v, a refusal", res, got, err, reply.err)
			}
			bad := append(res, "9")
			if _, err := decodeReserved(r, "", bad, saleTerms{}); err == nil || IsRefusal(err) {
				t.Errorf("%v: %v, want an unexpected reply", bad, err)
			}
		})
	}
	for _, res := range [][]any{{int64(-99)}, {int64(2), "x"}, {"RESERVED", int64(3)}} {
		if _, err := decodeReserved(r, "", res, saleTerms{}); err == nil || IsRefusal(err) {
			t.Errorf("%v: %v, want an unexpected reply", res, err)
		}
	}
	if IsRefusal(errors.New("READONLY You can't write against a read only replica")) || IsRefusal(nil) {
		t.Error("a failure or nil is taken for a refusal")
	}
	for _, err := range []error{ErrSoldOutFlagged, errNoneLeft, ErrClosed, &RateLimitedError{}, &KeyReusedError{}} {
		if !IsRefusal(err) {
			t.Errorf("%v is not a refusal", err)
		}
	}
}
