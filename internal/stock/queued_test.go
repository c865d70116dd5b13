package stock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"seckill/internal/testutil"
)

// The queued value has one format in both languages: what Go encodes, Lua's
// parse_queued reads field for field, and what Lua's queued_value encodes, Go's
// parseQueued reads back as the order it was made from, and the two encoders write the
// same bytes. A user id past 2^53 stays exact (Lua keeps it a string).
func TestQueuedValueOneFormat(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	created := time.UnixMilli(1_795_000_000_123).UTC()
	tests := []struct {
		name string
		q    QueuedOrder
	}{
		{"plain", QueuedOrder{UserID: 42, Quantity: 2, CreatedAt: created, Limit: 5}},
		{"capped", QueuedOrder{UserID: 7, Quantity: 1, CreatedAt: created, Limit: 3, Participations: 2}},
		{"seat", QueuedOrder{UserID: 9, Quantity: 1, CreatedAt: created, Limit: 1, Participations: 4,
			Group: "01JGROUP", GroupSize: 3, GroupExpiresAt: created.Add(time.Hour)}},
		{"seat, no cap", QueuedOrder{UserID: 9, Quantity: 3, CreatedAt: created, Limit: 4,
			Group: "g-1", GroupSize: 10, GroupExpiresAt: created.Add(time.Minute)}},
		{"large user id", QueuedOrder{UserID: 1<<62 + 1, Quantity: 1, CreatedAt: created, Limit: 1}},
	}
	// decode: parse_queued's fields of ARGV[1] ("" for nil)
	decode := redis.NewScript(queuedLua + `
local out = {parse_queued(ARGV[1])}
for i = 1, 8 do out[i] = out[i] or '' end
return out
`)
	// encode: queued_value of ARGV, strings as the reserve script passes them (group ""
	// for none)
	encode := redis.NewScript(queuedLua + `
local group, size, expires = nil, nil, nil
if ARGV[6] ~= '' then group, size, expires = ARGV[6], ARGV[7], ARGV[8] end
return queued_value({user = ARGV[1], qty = ARGV[2], now = ARGV[3]}, ARGV[4], ARGV[5], group, size, expires)
`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			q.OrderID, q.ActivityID = "o1", 3
			value := queuedValue(q)

			got, err := decode.Run(ctx, rdb, nil, value).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			cap, size, expires := "", "", ""
			if q.Participations > 0 || q.Group != "" {
				cap = itoa(int64(q.Participations))
			}
			if q.Group != "" {
				size, expires = itoa(int64(q.GroupSize)), itoa(q.GroupExpiresAt.UnixMilli())
			}
			want := []string{itoa(q.UserID), itoa(int64(q.Quantity)), itoa(q.CreatedAt.UnixMilli()), itoa(int64(q.Limit)),
				cap, q.Group, size, expires}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Lua's parse_queued of Go's %q (-want +got):\n%s", value, diff)
			}
			if len(strings.Fields(value)) == 8 { // a field added later, past the eighth, is Go's alone
				later, err := decode.Run(ctx, rdb, nil, value+" 9 x").StringSlice()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, later); diff != "" {
					t.Errorf("Lua's parse_queued of %q with a later field (-want +got):\n%s", value, diff)
				}
			}

			lua, err := encode.Run(ctx, rdb, nil, itoa(q.UserID), q.Quantity, q.CreatedAt.UnixMilli(), q.Limit,
				q.Participations, q.Group, q.GroupSize, q.GroupExpiresAt.UnixMilli()).Text()
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
			if diff := cmp.Diff(q, back); diff != "" {
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
	got := QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAAA7", ActivityID: 7, UserID: 3, Quantity: 2,
		CreatedAt: created, Limit: 4}.Priced(Sale{PriceCents: 1250, PayWindow: 15 * time.Minute})
	want := QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAAA7", ActivityID: 7, UserID: 3, Quantity: 2, AmountCents: 2500,
		CreatedAt: created, ExpiresAt: created.Add(15 * time.Minute), Limit: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Priced (-want +got):\n%s", diff)
	}
}

// A line is read back as the order it was written from, every field of the record
// (Claimed aside) included, and it ends with the order's value in the queued hash.
func TestLineRoundTrip(t *testing.T) {
	created := time.UnixMilli(1_795_000_000_123).UTC()
	plain := QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAA1", ActivityID: 3, UserID: 42, Quantity: 2, CreatedAt: created,
		Limit: 5, AmountCents: 2000, ExpiresAt: created.Add(time.Minute)}
	capped := plain
	capped.Participations = 2
	seat := capped
	seat.Group, seat.GroupSize, seat.GroupExpiresAt = "01JGROUP", 3, created.Add(time.Hour)
	keyed := seat
	keyed.IdempotencyKey, keyed.Fingerprint = "k_9-x", "q2:join:01JGROUP"
	dash := plain // "-" is a key a client may send
	dash.IdempotencyKey, dash.Fingerprint = "-", "q2"
	large := plain
	large.UserID, large.ActivityID = 1<<62+1, 1<<40
	for name, q := range map[string]QueuedOrder{"plain": plain, "capped": capped, "seat": seat, "keyed seat": keyed,
		"key -": dash, "large ids": large} {
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
