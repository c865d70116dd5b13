package reserve

import (
	"errors"
	"fmt"
	"testing"

	"seckill/internal/stock"
)

// Each reply code of the table has one Lua name, and decodeReserved answers it with its
// refusal's sentinel (an answer IsRefusal knows) when it comes with its code's values,
// and with an error that is no refusal when it comes with others or is not in the table.
func TestReplyCodes(t *testing.T) {
	codes, names := map[int]bool{}, map[string]bool{}
	for _, r := range stock.PurchaseReplies {
		if codes[r.Code] || names[r.Lua] {
			t.Errorf("reply %d %s: code or name used twice", r.Code, r.Lua)
		}
		codes[r.Code], names[r.Lua] = true, true
	}
	r := Reservation{Purchase: stock.Purchase{ActivityID: 1, Buyer: "2", Quantity: 1}, OrderID: "o"}
	for _, reply := range stock.PurchaseReplies {
		t.Run(reply.Lua, func(t *testing.T) {
			res := []any{int64(reply.Code)}
			for i := range reply.Values {
				res = append(res, fmt.Sprint(i+1)) // as Lua's strings, or order ids
			}
			got, err := decodeReserved(r, "", res, saleTerms{limit: 5})
			switch {
			case reply.Err == nil && err != nil && reply.Code != stock.ReplyWrongBuckets:
				t.Errorf("%v: %+v %v, want an answer", res, got, err)
			case reply.Err != nil && (!errors.Is(err, reply.Err) || !stock.IsRefusal(err)):
				t.Errorf("%v: %+v %v, want %v, a refusal", res, got, err, reply.Err)
			}
			bad := append(res, "9")
			if _, err := decodeReserved(r, "", bad, saleTerms{}); err == nil || stock.IsRefusal(err) {
				t.Errorf("%v: %v, want an unexpected reply", bad, err)
			}
		})
	}
	for _, res := range [][]any{{int64(-99)}, {int64(2), "x"}, {"RESERVED", int64(3)}} {
		if _, err := decodeReserved(r, "", res, saleTerms{}); err == nil || stock.IsRefusal(err) {
			t.Errorf("%v: %v, want an unexpected reply", res, err)
		}
	}
	if stock.IsRefusal(errors.New("READONLY You can't write against a read only replica")) || stock.IsRefusal(nil) {
		t.Error("a failure or nil is taken for a refusal")
	}
	for _, err := range []error{ErrSoldOutFlagged, errNoneLeft, stock.ErrClosed, &stock.RateLimitedError{}, &stock.KeyReusedError{}} {
		if !stock.IsRefusal(err) {
			t.Errorf("%v is not a refusal", err)
		}
	}
}
