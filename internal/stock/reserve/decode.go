package reserve

import (
	"fmt"
	"slices"
	"time"

	"seckill/internal/stock"
	"seckill/internal/stock/group"
)

// decodeReserved turns r's reply from reserveScript, with the sale's terms of its call,
// into its answer: the reservation, or the refusal's error; fingerprint is r's
// (Reservation.Fingerprint), worked out once per purchase. A reply of an unknown code or
// of other values than its code's is an error.
func decodeReserved(r Reservation, fingerprint string, res []any, terms saleTerms) (Reserved, error) {
	code, err := stock.Integer(res[0])
	if err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", err)
	}
	i := slices.IndexFunc(stock.PurchaseReplies, func(r stock.PurchaseReply) bool { return int64(r.Code) == code })
	reserved := code == stock.ReplyReserved || code == stock.ReplyReservedEarly
	seat := reserved && r.Group != "" && len(res) == 6
	if i < 0 || len(res)-1 != stock.PurchaseReplies[i].Values && !seat {
		return Reserved{}, fmt.Errorf("reserve: unexpected script reply %v", res)
	}
	if code == stock.ReplyReplayed || code == stock.ReplyKeyReused {
		id, ok := res[1].(string)
		switch {
		case !ok:
			return Reserved{}, fmt.Errorf("reserve: unexpected script reply %v", res)
		case code == stock.ReplyReplayed:
			return Reserved{OrderID: id, Replayed: true}, nil
		}
		return Reserved{}, &stock.KeyReusedError{OrderID: id}
	}
	n, err := stock.Integers(res[1:])
	if err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", err)
	}
	switch code {
	case stock.ReplyReserved, stock.ReplyReservedEarly:
		got := Reserved{OrderID: r.OrderID, Available: n[0], Limit: terms.limit, EarlyAccess: code == stock.ReplyReservedEarly,
			PriceCents: terms.price, PayWindow: terms.payWindow, ParticipationCap: terms.cap, room: terms.room}
		if seat {
			got.Group = &group.Group{ID: r.Group, ActivityID: r.ActivityID, Members: int(n[1]), Size: int(n[2]),
				ExpiresAt: time.UnixMilli(n[3]).UTC(), Status: group.Status(n[4])}
		}
		got.Order = r.queued(got, fingerprint)
		return got, nil
	case stock.ReplySoldOut:
		if n[0] == 0 {
			return Reserved{Limit: int(n[2]), room: n[1] == 1}, errNoneLeft
		}
		return Reserved{}, &stock.DetailError{Err: stock.ErrSoldOut, Detail: fmt.Sprintf("only %d left", n[0])}
	case stock.ReplyOverLimit:
		return Reserved{}, &stock.DetailError{Err: stock.ErrLimitExceeded, Detail: fmt.Sprintf("you hold %d of at most %d units", n[0], n[1])}
	case stock.ReplyOverVariantLimit:
		return Reserved{}, &stock.DetailError{Err: stock.ErrLimitExceeded, Detail: fmt.Sprintf("you hold %d of at most %d units of this variant", n[0], n[1])}
	case stock.ReplyOverCap:
		return Reserved{}, &stock.DetailError{Err: stock.ErrLimitExceeded,
			Detail: fmt.Sprintf("you take part %d times, at most %d are allowed", n[0], n[1])}
	case stock.ReplyQuantityOverLimit:
		return Reserved{}, &stock.DetailError{Err: stock.ErrQuantityOverLimit, Detail: fmt.Sprintf("quantity must be between 1 and %d", n[0])}
	case stock.ReplyRateLimited:
		return Reserved{}, &stock.RateLimitedError{Wait: time.Duration(n[0]) * time.Microsecond}
	case stock.ReplyWrongBuckets:
		return Reserved{}, &wrongBucketsError{int(n[0])}
	}
	return Reserved{}, stock.PurchaseReplies[i].Err
}
