package stock

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

// apart are buyers whose names a naive scheme would mix up: a subject that is another's
// field ("p1", "l1" and "a1" are decimal 1's participations, lock and allowance under a
// bare prefix), one that looks like a key ("~1"), a decimal with a leading zero, a
// subject with a space and the same with the space escaped, subjects that differ in a
// trailing space or in letter case, 21 digits, and a UUID.
var apart = []buyer.ID{"1", "p1", "l1", "a1", "~1", "01", "a b", "a%20b", "a", "a ", "auth0|AbC", "auth0|abc",
	"109876543210987654321", "8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2"}

// The rule of whether a sale counts its buyers' orders is one: Go's Counted and the
// scripts' agree.
func TestCountedOneRule(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	script := redis.NewScript(parts(t, "buyer_fields.lua") + `
local group = nil
if ARGV[2] == 'bool' then group = true elseif ARGV[2] ~= '' then group = ARGV[2] end
return counted(tonumber(ARGV[1]), group) and 1 or 0
`)
	for _, c := range []struct {
		cap   int
		group string // "": nil, "bool": true, else a group id
	}{{0, ""}, {1, ""}, {3, ""}, {0, "bool"}, {0, "01JGROUP"}, {2, "01JGROUP"}} {
		got, err := script.Run(context.Background(), rdb, nil, c.cap, c.group).Int()
		if err != nil || (got == 1) != Counted(c.cap, c.group != "") {
			t.Errorf("cap %d, group %q: Lua counts %d (%v), Go %v", c.cap, c.group, got, err, Counted(c.cap, c.group != ""))
		}
	}
}

// A field of the users hash reads back as its kind and buyer, and one of no buyer's
// key is an error.
func TestBuyerField(t *testing.T) {
	for _, who := range apart {
		for _, f := range []struct {
			field string
			kind  FieldKind
		}{{UnitsField(who), UnitsKind}, {PartsField(who), PartsKind}, {lockMark + who.Key(), LockKind},
			{AllowanceField(who), AllowanceKind}, {VariantUnitsField(who, VariantAt(7)), VariantKind}} {
			kind, got, err := BuyerField(f.field)
			if err != nil || kind != f.kind || got != who {
				t.Errorf("field %q: %v %q %v, want %v %q", f.field, kind, got, err, f.kind, who)
			}
		}
	}
	for _, field := range []string{"p042", "l", "a~", "~a b", "0", "v3", "v3:042"} {
		if kind, who, err := BuyerField(field); err == nil {
			t.Errorf("field %q: %v %q, want an error", field, kind, who)
		}
	}
	if kind, _, err := BuyerField("x3:42"); err != nil || kind != OtherKind {
		t.Errorf("a field of another kind: %v %v, want otherKind", kind, err)
	}
}
