package reserve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"seckill/internal/stock"
)

// orderArgs are the arguments of a purchase that its order is made of, first of each
// purchase's in the reserve script's call (purchaseArgs): the script reads them as p.<name>
// and writes the order's queued value of them (queued_value).
var orderArgs = []purchaseArg{
	{"now", luaString, func(r Reservation, _ string) any { return r.Now.UnixMilli() }},
	{"user", luaString, func(r Reservation, _ string) any { return r.Buyer.Key() }}, // the buyer's key
	{"qty", luaString, func(r Reservation, _ string) any { return r.Quantity }},
	{"order", luaString, func(r Reservation, _ string) any { return r.OrderID }},
	{"variant", luaString, func(r Reservation, _ string) any { return r.Variant.Arg() }}, // "": none
}

// The reserve script's KEYS and ARGV, defined once here: reserveAll writes a call in
// this order, and the script unpacks it by these names (layoutLua): K.<name> and
// ARG.<name> for the call's, a table per purchase with a field per purchase key and
// argument. A call is callKeys, then each purchase's purchaseKeys and, for a seat,
// seatKeys; and callArgs, then len(purchaseArgs) arguments per purchase.
// callKeys are the keys of every call, all of the purchases' bucket.
var callKeys = []struct {
	name string
	key  func(stock.Bucket) string
}{
	{"sale", stock.SaleKey},              // the sale's hash
	{"users", stock.UsersKey},            // per buyer: units, lock, allowance, participations
	{"queued", stock.QueuedKey},          // order id -> queued value (queued.go)
	{"since", stock.QueuedSinceKey},      // queued order ids by when they were taken
	{"open_groups", stock.OpenGroupsKey}, // open groups by the end of their window
	{"fill_groups", stock.FillGroupsKey}, // open groups, fullest first
	{"codes", stock.CodesKey},            // the sale's access codes (code.lua), read before the start only
	{"claims", stock.CodeClaimsKey},      // the uses of codes not yet recorded in MySQL
}

// callArgs are the arguments of every call.
var callArgs = []struct {
	name  string
	value func(stock.Bucket) any
}{
	{"key_ttl", func(stock.Bucket) any { return int64(IdempotencyTTL / time.Second) }},
	// the sale's buckets as the caller believes (it chose the bucket by them)
	{"buckets", func(b stock.Bucket) any { return max(1, b.K()) }},
}

// purchaseKeys are each purchase's keys; seatKeys follow them for a seat (mode not "").
var purchaseKeys, seatKeys = []purchaseKey{
	{"idempotency_key", func(b stock.Bucket, r Reservation) string { return stock.IdempotencyKey(b, r.Buyer, r.IdempotencyKey) }},
	{"allowance_key", func(b stock.Bucket, r Reservation) string { return stock.RateKey(b, r.Buyer) }},
}, []purchaseKey{
	{"group_key", func(b stock.Bucket, r Reservation) string { return stock.GroupKey(b, r.Group) }},
	{"seats_key", func(b stock.Bucket, r Reservation) string { return stock.GroupSeatsKey(b, r.Group) }},
}

type purchaseKey struct {
	name string
	key  func(stock.Bucket, Reservation) string
}

// purchaseArgs are each purchase's arguments: the order's own (orderArgs, queued.go),
// then what the script decides by.
var purchaseArgs = slices.Concat(orderArgs, []purchaseArg{
	{"fingerprint", luaString, func(_ Reservation, fp string) any { return fp }}, // "": no Idempotency-Key
	{"lock_token", luaString, func(r Reservation, _ string) any { return r.LockToken }},
	{"lock_ttl", luaNumber, func(r Reservation, _ string) any { return r.LockTTL.Milliseconds() }},
	{"mode", luaString, func(r Reservation, _ string) any { return r.Mode() }},
	{"group", luaString, func(r Reservation, _ string) any { return r.Group }},
	{"interval", luaNumber, func(r Reservation, _ string) any { i, _ := r.allowance(); return i }},
	{"tolerance", luaNumber, func(r Reservation, _ string) any { _, t := r.allowance(); return t }},
	{"redis_clock", luaFlag, func(r Reservation, _ string) any { return flag(r.RedisClock) }},
	{"pass_expires", luaNumber, func(r Reservation, _ string) any { return r.passArg() }}, // nil: no pass
	{"access_code", luaString, func(r Reservation, _ string) any { return r.AccessCode }}, // "": none
})

// purchaseArg is one of a purchase's arguments, with how the script reads it: a value
// the script writes back (now, qty) stays the string it came as, since turning a number
// into a string costs the server more than the rest of the value.
type purchaseArg struct {
	name  string
	lua   luaValue
	value func(r Reservation, fingerprint string) any
}

// luaValue is how the script reads an argument: a string, a number, or a flag (1: true).
type luaValue int

const (
	luaString luaValue = iota
	luaNumber
	luaFlag
)

// flag is a luaFlag's value.
func flag(on bool) int {
	if on {
		return 1
	}
	return 0
}

// layoutLua unpacks a call for the script: K and ARG, and unpack_purchases(), which
// returns the purchases' tables in order: the section "layout" of reserve.lua.
func layoutLua() string {
	var b strings.Builder
	b.WriteString("local K = {")
	for i, k := range callKeys {
		fmt.Fprintf(&b, "%s%s = KEYS[%d]", sep(i), k.name, i+1)
	}
	b.WriteString("}\nlocal ARG = {")
	for i, a := range callArgs {
		fmt.Fprintf(&b, "%s%s = ARGV[%d]", sep(i), a.name, i+1)
	}
	fmt.Fprintf(&b, "}\nlocal function unpack_purchases()\n  local out, k = {}, %d\n", len(callKeys))
	fmt.Fprintf(&b, "  for a = %d, #ARGV - 1, %d do\n    local p = {", len(callArgs), len(purchaseArgs))
	b.WriteString(argsLua(purchaseArgs, "a + "))
	for i, k := range purchaseKeys { // in the constructor: a field added later grows the table
		fmt.Fprintf(&b, ", %s = KEYS[k + %d]", k.name, i+1)
	}
	fmt.Fprintf(&b, "}\n    k = k + %d\n    if p.mode ~= '' then\n", len(purchaseKeys))
	for i, k := range seatKeys {
		fmt.Fprintf(&b, "      p.%s = KEYS[k + %d]\n", k.name, i+1)
	}
	fmt.Fprintf(&b, "      k = k + %d\n    end\n", len(seatKeys))
	b.WriteString("    out[#out + 1] = p\n  end\n  return out\nend\n")
	return b.String()
}

// argsLua is the fields of a Lua table of args, each read as the script reads it from
// ARGV[<at>1], ARGV[<at>2] and on.
func argsLua(args []purchaseArg, at string) string {
	var b strings.Builder
	for i, a := range args {
		arg := fmt.Sprintf("ARGV[%s%d]", at, i+1)
		switch a.lua {
		case luaNumber:
			arg = "tonumber(" + arg + ")"
		case luaFlag:
			arg += " == '1'"
		}
		fmt.Fprintf(&b, "%s%s = %s", sep(i), a.name, arg)
	}
	return b.String()
}

func sep(i int) string {
	if i == 0 {
		return ""
	}
	return ", "
}

// reserveAll runs reserveScript once for calls, purchases of one bucket of a sale, and
// leaves each one's reply (or the call's error) in it.
func (s *Reserver) reserveAll(ctx context.Context, calls []*reserveCall) {
	b := calls[0].b
	keys := make([]string, 0, len(callKeys)+(len(purchaseKeys)+len(seatKeys))*len(calls))
	args := make([]any, 0, len(callArgs)+len(purchaseArgs)*len(calls))
	for _, k := range callKeys {
		keys = append(keys, k.key(b))
	}
	for _, a := range callArgs {
		args = append(args, a.value(b))
	}
	for _, c := range calls {
		for _, k := range purchaseKeys {
			keys = append(keys, k.key(b, c.r))
		}
		if c.r.Mode() != "" {
			for _, k := range seatKeys {
				keys = append(keys, k.key(b, c.r))
			}
		}
		for _, a := range purchaseArgs {
			args = append(args, a.value(c.r, c.fingerprint))
		}
	}
	var res []any
	err := stock.WhileMoving(ctx, s.rdb, func() (err error) {
		res, err = stock.Reply(reserveScript.Run(ctx, s.rdb, keys, args...).Result())
		return err
	})
	var terms saleTerms
	if err == nil {
		if len(res) != len(calls)+1 {
			err = fmt.Errorf("unexpected script reply %v for %d purchases", res, len(calls))
		} else {
			terms, err = decodeTerms(res[len(calls)])
		}
	}
	for i, c := range calls {
		if err != nil {
			c.err = err
			continue
		}
		c.terms = terms
		if c.reply, c.err = stock.Reply(res[i], nil); c.err != nil {
			c.err = fmt.Errorf("purchase %d of %d: %w", i+1, len(calls), c.err)
		}
	}
}

// saleTerms is what the reserve script answers once per call: the sale's terms that a
// purchase's answer carries.
type saleTerms struct {
	limit, cap int
	price      int64
	payWindow  time.Duration
	room       bool
}

func decodeTerms(v any) (saleTerms, error) {
	vs, err := stock.Reply(v, nil)
	if err != nil {
		return saleTerms{}, err
	}
	n, err := stock.Integers(vs)
	if err != nil || len(n) != 5 {
		return saleTerms{}, fmt.Errorf("unexpected sale terms %v in the script's reply", vs)
	}
	return saleTerms{limit: int(n[0]), price: n[1], payWindow: time.Duration(n[2]) * time.Second,
		cap: int(n[3]), room: n[4] == 1}, nil
}
