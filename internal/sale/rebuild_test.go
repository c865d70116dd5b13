package sale_test

import (
	"context"
	"testing"
	"time"

	"seckill/internal/upkeep"
)

// A rebuild that raised its sale's epoch in MySQL and stopped before it wrote Redis
// leaves Redis's epoch behind (every worker's write of a claim made there is refused):
// the worker's periodic check rebuilds the sale, and Redis ends with MySQL's epoch. While
// the sale is closed by a rebuild under way, the check leaves it to that one.
func TestRebuildLostCatchesAnEpochBehind(t *testing.T) {
	f := newFixture(t, 10, 3)
	ctx := context.Background()
	r := upkeep.NewRebuilder(f.store.Upkeep, f.store.Activities, f.stock.Stock)
	if n, err := r.RebuildLost(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("a current sale: %d rebuilt, %v; want none", n, err)
	}
	closing, err := f.stock.Close(ctx, f.act, 1) // a rebuild under way ...
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Upkeep.NextRedisEpoch(ctx, f.act); err != nil { // ... has raised the epoch
		t.Fatal(err)
	}
	if n, err := r.RebuildLost(ctx, time.Now()); err != nil || n != 0 {
		t.Errorf("a sale closed by a rebuild under way: %d rebuilt, %v; want it left to that rebuild", n, err)
	}
	if err := f.stock.Reopen(ctx, f.act, 1, closing); err != nil { // ... and stopped there
		t.Fatal(err)
	}
	if n, err := r.RebuildLost(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("a sale whose epoch is behind MySQL's: %d rebuilt, %v; want 1", n, err)
	}
	a, err := f.store.Activities.GetActivity(ctx, f.act)
	if err != nil {
		t.Fatal(err)
	}
	if _, epoch, stuck, err := f.stock.Gens(ctx, f.act, 1); err != nil || epoch != a.RedisEpoch || a.RedisEpoch != 2 || stuck {
		t.Errorf("after the check: Redis epoch %d (stuck %v, %v), MySQL's %d; want both 2", epoch, stuck, err, a.RedisEpoch)
	}
	if n, err := r.RebuildLost(ctx, time.Now()); err != nil || n != 0 {
		t.Errorf("the rebuilt sale: %d rebuilt, %v; want none", n, err)
	}
}
