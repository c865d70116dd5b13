package stock

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

// What a buyer holds has one reading in both languages: the users hash Go stages
// (HoldingFields) is what Lua's holding reads, an order Lua's hold adds grows the
// holding by Go's Holds as ParseHoldings reads it, release takes the same back and
// clears the fields of a buyer who holds nothing, and Go's QuantityOverLimit refuses the
// quantities Lua's quantity_refused does.
func TestHoldingsOneReading(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	const key = "{sale:1}:users"

	var fields []any
	HoldingFields(map[buyer.ID]int64{"7": 3, "8": 0, "9": 1}, map[buyer.ID]int64{"7": 2, "9": 1}, true,
		func(f string, n int64) { fields = append(fields, f, n) })
	if err := rdb.HSet(ctx, key, fields...).Err(); err != nil {
		t.Fatal(err)
	}
	// read: holding(user) as {units, participations}
	read := redis.NewScript(parts(t, "buyer_fields.lua", "holdings.lua") + `
local units, parts = holding(KEYS[1], hget, ARGV[1], true)
return {units, parts, holds_any(KEYS[1], ARGV[1]) and 1 or 0}
`)
	// take: hold one more order of ARGV[2] units for ARGV[1]
	take := redis.NewScript(parts(t, "buyer_fields.lua", "holdings.lua") + `
local units, parts = holding(KEYS[1], hget, ARGV[1], true)
hold(KEYS[1], hset, ARGV[1], units, parts, tonumber(ARGV[2]), true)
`)
	// give: release one order of ARGV[2] units of ARGV[1]; 1 when nothing is held after
	give := redis.NewScript(parts(t, "buyer_fields.lua", "holdings.lua") + `
return release(KEYS[1], ARGV[1], tonumber(ARGV[2])) and 1 or 0
`)
	held := func(user string) []int64 {
		t.Helper()
		got, err := read.Run(ctx, rdb, []string{key}, user).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	snapshot := func() map[buyer.ID]int64 {
		t.Helper()
		hash, err := rdb.HGetAll(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		out := map[buyer.ID]int64{}
		if err := ParseHoldings(hash, out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	for user, want := range map[string][]int64{"7": {3, 2, 1}, "8": {0, 0, 0}, "9": {1, 1, 1}} {
		if got := held(user); !cmp.Equal(got, want) {
			t.Errorf("holding of staged user %s = %v, want %v", user, got, want)
		}
	}
	if err := take.Run(ctx, rdb, []string{key}, "7", 2).Err(); err != redis.Nil {
		t.Fatal(err)
	}
	if got, want := snapshot(), map[buyer.ID]int64{"7": 3 + Holds(2), "9": 1}; !cmp.Equal(got, want) {
		t.Errorf("after an order of 2: %v, want %v", got, want)
	}
	if got, want := held("7"), []int64{3 + Holds(2), 3, 1}; !cmp.Equal(got, want) {
		t.Errorf("after an order of 2: holding %v, want %v", got, want)
	}
	for _, step := range []struct {
		user       string
		qty        int64
		emptyAfter int64
		want       []int64
	}{
		{"7", 2, 0, []int64{3, 2, 1}},
		{"7", 3, 1, []int64{0, 1, 0}},
		{"9", 1, 1, []int64{0, 0, 0}},
	} {
		got, err := give.Run(ctx, rdb, []string{key}, step.user, step.qty).Int64()
		if err != nil || got != step.emptyAfter {
			t.Errorf("release %d of %s: %d %v, want %d", step.qty, step.user, got, err, step.emptyAfter)
		}
		if got := held(step.user); !cmp.Equal(got, step.want) {
			t.Errorf("after release %d of %s: holding %v, want %v", step.qty, step.user, got, step.want)
		}
	}
	if n, err := rdb.HLen(ctx, key).Result(); err != nil || n != 1 { // 7's last participation
		t.Errorf("users hash keeps %d fields (%v), want p7 alone", n, err)
	}

	quantity := redis.NewScript(parts(t, "replies.lua", "user_limit.lua") + `
return quantity_refused(tonumber(ARGV[1]), tonumber(ARGV[2])) and 1 or 0
`)
	for qty := 1; qty <= 4; qty++ {
		got, err := quantity.Run(ctx, rdb, []string{key}, qty, 3).Int()
		if err != nil || (got == 1) != QuantityOverLimit(qty, 3) {
			t.Errorf("quantity %d of limit 3: Lua refuses %d (%v), Go %v", qty, got, err, QuantityOverLimit(qty, 3))
		}
	}
}
