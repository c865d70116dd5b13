package stock_test

import (
	"context"
	"testing"

	"seckill/internal/stock"
	"seckill/internal/testutil"
)

// A lost sale is rebuilt once: the first Rebuild writes it, a second finds it there and
// changes nothing; purchases then run against the rebuilt units and allowances.
func TestRebuild(t *testing.T) {
	s := stock.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	sale := stock.Sale{ActivityID: 9, Available: 2, Total: 10, Limit: 3, StartsAt: t0, EndsAt: t0.Add(3600e9),
		PriceCents: 100, PayWindow: 60e9}
	users := map[int64]int64{7: 3, 8: 5}
	steps := []struct {
		name        string
		sale        stock.Sale
		wantRebuilt bool
	}{
		{"lost: rebuilt", sale, true},
		{"there: left as it is", stock.Sale{ActivityID: 9, Available: 99, Total: 99, Limit: 99, EndsAt: t0}, false},
	}
	for _, st := range steps {
		got, err := s.Rebuild(ctx, st.sale, users)
		if err != nil || got != st.wantRebuilt {
			t.Fatalf("%s: rebuilt %v, %v; want %v", st.name, got, err, st.wantRebuilt)
		}
		snap, err := s.Snapshot(ctx, 9)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Sale.Available != 2 || snap.Sale.Total != 10 || snap.Users[7] != 3 || snap.Users[8] != 5 {
			t.Fatalf("%s: snapshot %+v, want the first rebuild's state", st.name, snap)
		}
	}
	in := t0.Add(60e9)
	if _, err := s.Reserve(ctx, reservation(9, 7, 1, "", in)); err == nil {
		t.Errorf("user 7 holds 3 of 3 after the rebuild, yet bought one more")
	}
	if _, err := s.Reserve(ctx, reservation(9, 1, 2, "", in)); err != nil {
		t.Errorf("a new buyer on the rebuilt sale: %v", err)
	}
	if _, err := s.Reserve(ctx, reservation(9, 2, 1, "", in)); err == nil {
		t.Errorf("the rebuilt sale had 2 units; a third sold")
	}
}
