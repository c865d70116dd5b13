package stock

import (
	"context"
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
		if !strings.HasSuffix(string(line), " "+QueuedValue(q)) {
			t.Errorf("%s: line %q does not end with the value %q", name, line, QueuedValue(q))
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
	if got := QueuedValue(q); got != value {
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
	encode := redis.NewScript(parts(t, "queued.lua") + `
return queued_value({user = ARGV[1], qty = ARGV[2], now = ARGV[3], variant = ARGV[4], offered = true}, ARGV[5], tonumber(ARGV[6]))
`)
	decode := redis.NewScript(parts(t, "queued.lua") + `
local user, qty, _, _, _, _, _, _, variant = parse_queued(ARGV[1])
return {user, qty, variant or ''}
`)
	created := time.UnixMilli(1_795_000_000_123).UTC()
	for _, q := range []QueuedOrder{
		{OrderID: "o1", ActivityID: 3, Buyer: "42", Quantity: 2, CreatedAt: created, Limit: 3, Offered: true},
		{OrderID: "o2", ActivityID: 3, Buyer: "~auth0|x", Quantity: 1, CreatedAt: created, Limit: 2, ParticipationCap: 4,
			Variant: VariantAt(7), Offered: true},
	} {
		lua, err := encode.Run(ctx, rdb, nil, q.Buyer.Key(), q.Quantity, q.CreatedAt.UnixMilli(), q.Variant.Arg(), q.Limit,
			q.ParticipationCap).Text()
		if err != nil {
			t.Fatal(err)
		}
		if goValue := QueuedValue(q); lua != goValue {
			t.Errorf("Lua's offered value %q, Go's %q", lua, goValue)
		}
		back, err := ParseQueued(q.ActivityID, q.OrderID, lua)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(q, back); diff != "" {
			t.Errorf("Go's ParseQueued of Lua's %q (-want +got):\n%s", lua, diff)
		}
		got, err := decode.Run(ctx, rdb, nil, lua).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{q.Buyer.Key(), strconv.Itoa(q.Quantity), q.Variant.Arg()}; !slices.Equal(got, want) {
			t.Errorf("Lua's parse_queued of %q: %v, want %v", lua, got, want)
		}
	}
}
