package reserve

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/testutil"
)

// The queued value has one format in both languages: what Go encodes, Lua's
// parse_queued reads field for field, and what Lua's queued_value encodes, Go's
// ParseQueued reads back as the order it was made from, and the two encoders write the
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
		return Reservation{Purchase: stock.Purchase{ActivityID: 3, Buyer: who, Quantity: qty}, OrderID: "o1", Now: created}
	}
	variant := func(r Reservation, i int) Reservation {
		r.Variant = stock.VariantAt(i)
		return r
	}
	seat := func(id string, size int, expires time.Time) *group.Group {
		return &group.Group{ID: id, Size: size, ExpiresAt: expires}
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
	decode := redis.NewScript(queuedPart(t) + `
local out = {parse_queued(ARGV[1])}
for i = 1, 9 do out[i] = out[i] or '' end
return out
`)
	// encode: queued_value of the purchase's orderArgs, then limit, cap and the group
	// (group "" for none), as the reserve script passes them, and "1" for a purchase of
	// the early window (p.early, which the script sets)
	n := len(orderArgs)
	encode := redis.NewScript(queuedPart(t) + fmt.Sprintf(`
local p = {%s}
local group, size, expires = nil, nil, nil
if ARGV[%d] ~= '' then group, size, expires = ARGV[%d], ARGV[%d], ARGV[%d] end
p.early = ARGV[%d] == '1'
return queued_value(p, ARGV[%d], ARGV[%d], group, size, expires)
`, argsLua(orderArgs, ""), n+3, n+3, n+4, n+5, n+6, n+1, n+2))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.r.queued(tt.got, "")
			value := stock.QueuedValue(q)

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
			back, err := stock.ParseQueued(q.ActivityID, q.OrderID, lua)
			if err != nil {
				t.Fatal(err)
			}
			// The value leaves the amount and the pay window to the sale's hash.
			stored := q
			stored.AmountCents, stored.ExpiresAt = 0, time.Time{}
			if diff := cmp.Diff(stored, back); diff != "" {
				t.Errorf("Go's stock.ParseQueued of Lua's %q (-want +got):\n%s", lua, diff)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// queuedPart is the part queued.lua of internal/stock.
func queuedPart(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../queued.lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
