package stock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

// The queued value has one format in both languages: what Go encodes, Lua's
// parse_queued reads field for field, and what Lua's queued_value encodes, Go's
// parseQueued reads back as the order it was made from, and the two encoders write the
// same bytes. Each case is a reservation and the script's answer to it: Go's order is
// Reservation.queued of them, and Lua's queued_value gets the purchase's orderArgs as the
// reserve script reads them, so a field added to the order's way through stock needs
// only a case here. A user id past 2^53 stays exact (Lua keeps it a string), and a
// buyer of any subject is its key, whatever bytes it holds.
func TestQueuedValueOneFormat(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	created := time.UnixMilli(1_795_000_000_123).UTC()
	buy := func(who buyer.ID, qty int) Reservation {
		return Reservation{Purchase: Purchase{ActivityID: 3, Buyer: who, Quantity: qty}, OrderID: "o1", Now: created}
	}
	variant := func(r Reservation, i int) Reservation {
		r.Variant = VariantAt(i)
		return r
	}
	seat := func(id string, size int, expires time.Time) *Group {
		return &Group{ID: id, Size: size, ExpiresAt: expires}
	}
	tests := []struct {
		name string
		r    Reservation
		got  Reserved // the script's answer: the terms and the seat's group
	}{
		{"plain", buy("42", 2), Reserved{Limit: 5}},
		{"capped", buy("7", 1), Reserved{Limit: 3, ParticipationCap: 2}},
		{"seat", buy("9", 1), Reserved{Limit: 1, ParticipationCap: 4, Group: seat("01JGROUP", 3, created.Add(time.Hour))}},
		{"seat, no cap", buy("9", 3), Reserved{Limit: 4, Group: seat("g-1", 10, created.Add(time.Minute))}},
		{"large user id", buy(buyer.Of(1<<62+1), 1), Reserved{Limit: 1}},
		{"a UUID buyer", buy("8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2", 2), Reserved{Limit: 5}},
		{"an auth0 buyer in a group", buy("auth0|64f1c2", 1), Reserved{Limit: 2, ParticipationCap: 1,
			Group: seat("01JGROUP", 3, created.Add(time.Hour))}},
		{"a buyer of 21 digits", buy("109876543210987654321", 1), Reserved{Limit: 1}},
		{"a buyer with spaces and a no-break space", buy("a b c ", 1), Reserved{Limit: 1, ParticipationCap: 3}},
		{"a buyer with a percent sign", buy("100%", 1), Reserved{Limit: 1}},
		{"a variant", variant(buy("42", 2), 0), Reserved{Limit: 5}},
		{"the last of 100 variants, capped", variant(buy("~x y", 1), 99), Reserved{Limit: 2, ParticipationCap: 2}},
		{"early", buy("42", 1), Reserved{Limit: 2, EarlyAccess: true}},
		{"early, a variant, capped", variant(buy("auth0|64f1c2", 1), 7), Reserved{Limit: 2, ParticipationCap: 1, EarlyAccess: true}},
		{"early, a seat", buy("9", 1), Reserved{Limit: 1, EarlyAccess: true, Group: seat("01JGROUP", 3, created.Add(time.Hour))}},
	}
	// decode: parse_queued's fields of ARGV[1] ("" for nil)
	decode := redis.NewScript(queuedLua + `
local out = {parse_queued(ARGV[1])}
for i = 1, 9 do out[i] = out[i] or '' end
return out
`)
	// encode: queued_value of the purchase's orderArgs, then limit, cap and the group
	// (group "" for none), as the reserve script passes them, and "1" for a purchase of
	// the early window (p.early, which the script sets)
	n := len(orderArgs)
	encode := redis.NewScript(queuedLua + fmt.Sprintf(`
local p = {%s}
local group, size, expires = nil, nil, nil
if ARGV[%d] ~= '' then group, size, expires = ARGV[%d], ARGV[%d], ARGV[%d] end
p.early = ARGV[%d] == '1'
return queued_value(p, ARGV[%d], ARGV[%d], group, size, expires)
`, argsLua(orderArgs, ""), n+3, n+3, n+4, n+5, n+6, n+1, n+2))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.r.queued(tt.got, "")
			value := queuedValue(q)

			got, err := decode.Run(ctx, rdb, nil, value).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			cap, size, expires := "", "", ""
			if len(strings.Split(value, " ")) >= 8 { // the long form: the cap, then the group
				cap = itoa(int64(q.ParticipationCap))
			}
			if q.Group != "" {
				size, expires = itoa(int64(q.GroupSize)), itoa(q.GroupExpiresAt.UnixMilli())
			}
			variant := ""
			if i, ok := q.Variant.Index(); ok {
				variant = itoa(int64(i))
			}
			want := []string{q.Buyer.Key(), itoa(int64(q.Quantity)), itoa(q.CreatedAt.UnixMilli()), itoa(int64(q.Limit)),
				cap, q.Group, size, expires, variant}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Lua's parse_queued of Go's %q (-want +got):\n%s", value, diff)
			}
			if len(strings.Split(value, " ")) == 9 { // a field added later, past the ninth, is Go's alone
				later, err := decode.Run(ctx, rdb, nil, value+" 9 x").StringSlice()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, later); diff != "" {
					t.Errorf("Lua's parse_queued of %q with a later field (-want +got):\n%s", value, diff)
				}
			}

			args := make([]any, 0, n+5)
			for _, a := range orderArgs {
				args = append(args, a.value(tt.r, ""))
			}
			var group string
			var groupSize, groupEnd int64
			if g := tt.got.Group; g != nil {
				group, groupSize, groupEnd = g.ID, int64(g.Size), g.ExpiresAt.UnixMilli()
			}
			args = append(args, tt.got.Limit, tt.got.ParticipationCap, group, groupSize, groupEnd, flag(tt.got.EarlyAccess))
			lua, err := encode.Run(ctx, rdb, nil, args...).Text()
			if err != nil {
				t.Fatal(err)
			}
			if lua != value {
				t.Errorf("Lua's queued_value %q, Go's %q", lua, value)
			}
			back, err := parseQueued(q.ActivityID, q.OrderID, lua)
			if err != nil {
				t.Fatal(err)
			}
			// The value leaves the amount and the pay window to the sale's hash.
			stored := q
			stored.AmountCents, stored.ExpiresAt = 0, time.Time{}
			if diff := cmp.Diff(stored, back); diff != "" {
				t.Errorf("Go's parseQueued of Lua's %q (-want +got):\n%s", lua, diff)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A queued order's amount is the unit price times the quantity, and its pay window as
// set ends one window after it was taken.
func TestPriced(t *testing.T) {
	created := time.UnixMilli(1795306517123).UTC()
	got := QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAAA7", ActivityID: 7, Buyer: "3", Quantity: 2,
		CreatedAt: created, Limit: 4}.Priced(Sale{PriceCents: 1250, PayWindow: 15 * time.Minute})
	want := QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAAA7", ActivityID: 7, Buyer: "3", Quantity: 2, AmountCents: 2500,
		CreatedAt: created, ExpiresAt: created.Add(15 * time.Minute), Limit: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Priced (-want +got):\n%s", diff)
	}
}

// A line is read back as the order it was written from, every field of the record
// (Claimed aside) included, and it ends with the order's value in the queued hash.
func TestLineRoundTrip(t *testing.T) {
	created := time.UnixMilli(1_795_000_000_123).UTC()
	plain := QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAA1", ActivityID: 3, Buyer: "42", Quantity: 2, CreatedAt: created,
		Limit: 5, AmountCents: 2000, ExpiresAt: created.Add(time.Minute)}
	capped := plain
	capped.ParticipationCap = 2
	seat := capped
	seat.Group, seat.GroupSize, seat.GroupExpiresAt = "01JGROUP", 3, created.Add(time.Hour)
	keyed := seat
	keyed.IdempotencyKey, keyed.Fingerprint = "k_9-x", "q2:join:01JGROUP"
	dash := plain // "-" is a key a client may send
	dash.IdempotencyKey, dash.Fingerprint = "-", "q2"
	large := plain
	large.Buyer, large.ActivityID = buyer.Of(1<<62+1), 1<<40
	uuid := keyed
	uuid.Buyer = "8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2"
	spaces := capped // a key has no space; Go splits on single spaces, not on a no-break space
	spaces.Buyer = " auth0|a b c %20 "
	for name, q := range map[string]QueuedOrder{"plain": plain, "capped": capped, "seat": seat, "keyed seat": keyed,
		"key -": dash, "large ids": large, "a UUID buyer": uuid, "a buyer with spaces": spaces} {
		line := q.AppendLine(nil)
		got, err := ParseLine(line)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(q, got); diff != "" {
			t.Errorf("%s: %q read back (-want +got):\n%s", name, line, diff)
		}
		if !strings.HasSuffix(string(line), " "+queuedValue(q)) {
			t.Errorf("%s: line %q does not end with the value %q", name, line, queuedValue(q))
		}
	}
}

// A decimal buyer's queued value and task line are the bytes of the release before any
// buyer was: a sale live across the upgrade, and tasks queued before it, still read.
func TestDecimalBuyersValueAndLineUnchanged(t *testing.T) {
	created := time.UnixMilli(1_795_000_000_123).UTC()
	q := QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAA1", ActivityID: 3, Buyer: "42", Quantity: 2, CreatedAt: created,
		Limit: 5, AmountCents: 2000, ExpiresAt: created.Add(time.Minute), ParticipationCap: 2,
		IdempotencyKey: "k1", Fingerprint: "q2"}
	const value = "42 2 1795000000123 5 2 - 0 0"
	const line = "01KAAAAAAAAAAAAAAAAAAAAAA1 3 2000 1795000060123 k1 q2 " + value
	if got := queuedValue(q); got != value {
		t.Errorf("value %q, want %q", got, value)
	}
	if got := string(q.AppendLine(nil)); got != line {
		t.Errorf("line %q, want %q", got, line)
	}
	back, err := ParseLine([]byte(line))
	if err != nil || back.Buyer != "42" {
		t.Errorf("the line read back: %+v, %v; want buyer 42", back, err)
	}
	for _, bad := range []string{
		"01KAAAAAAAAAAAAAAAAAAAAAA1 3 2000 1795000060123 k1 q2 042 2 1795000000123 5", // no buyer's key
		"01KAAAAAAAAAAAAAAAAAAAAAA1 3 2000 1795000060123 k1 q2 ~42 2 1795000000123 5",
		"01KAAAAAAAAAAAAAAAAAAAAAA1 3 2000 1795000060123 k1 q2  42 2 1795000000123 5", // two spaces
	} {
		if got, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("ParseLine(%q) = %+v, want an error", bad, got)
		}
	}
}

// An order the waitlist offered has one value in both languages too: what the offer's
// Lua writes (queued_value of an offer), Go reads back as the order, Offered and its
// variant (or none) kept, and Go writes the same bytes; Lua's parse_queued reads its
// variant, the last field it decides by.
func TestOfferedValueOneFormat(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	encode := redis.NewScript(queuedLua + `
return queued_value({user = ARGV[1], qty = ARGV[2], now = ARGV[3], variant = ARGV[4], offered = true}, ARGV[5], tonumber(ARGV[6]))
`)
	decode := redis.NewScript(queuedLua + `
local user, qty, _, _, _, _, _, _, variant = parse_queued(ARGV[1])
return {user, qty, variant or ''}
`)
	created := time.UnixMilli(1_795_000_000_123).UTC()
	for _, q := range []QueuedOrder{
		{OrderID: "o1", ActivityID: 3, Buyer: "42", Quantity: 2, CreatedAt: created, Limit: 3, Offered: true},
		{OrderID: "o2", ActivityID: 3, Buyer: "~auth0|x", Quantity: 1, CreatedAt: created, Limit: 2, ParticipationCap: 4,
			Variant: VariantAt(7), Offered: true},
	} {
		lua, err := encode.Run(ctx, rdb, nil, q.Buyer.Key(), q.Quantity, q.CreatedAt.UnixMilli(), q.Variant.arg(), q.Limit,
			q.ParticipationCap).Text()
		if err != nil {
			t.Fatal(err)
		}
		if goValue := queuedValue(q); lua != goValue {
			t.Errorf("Lua's offered value %q, Go's %q", lua, goValue)
		}
		back, err := parseQueued(q.ActivityID, q.OrderID, lua)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(q, back); diff != "" {
			t.Errorf("Go's parseQueued of Lua's %q (-want +got):\n%s", lua, diff)
		}
		got, err := decode.Run(ctx, rdb, nil, lua).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{q.Buyer.Key(), itoa(int64(q.Quantity)), q.Variant.arg()}; !slices.Equal(got, want) {
			t.Errorf("Lua's parse_queued of %q: %v, want %v", lua, got, want)
		}
	}
}
