package funnel

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"seckill/internal/stock"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// Refusals counted by many goroutines reach Redis exactly, summed over several
// processes' counts; those of an archived sale are added to its kept funnel in MySQL,
// and those of a sale neither holds (no such sale) are dropped without a key or a row;
// a flush that fails keeps its counts for the next.
func TestRefusalsFlush(t *testing.T) {
	srv := testutil.StartRedis(t, "--appendonly", "yes")
	rdb := srv.Client(t)
	ctx := context.Background()
	sk := stocktest.New(rdb)
	db := testutil.MySQL(t).Gorm
	f := New(db, rdb, nil, nil, sk.Stock, nil)
	const archived = 98 // its Redis state gone, its funnel kept with 2 refusals
	if err := db.Create(&kept{ActivityID: archived, Refused: `{"sale_ended":2}`, KeptAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	if err := sk.Load(ctx, stock.Sale{ActivityID: 1, Available: 10, Total: 10, Limit: 1, StartsAt: time.Now(),
		EndsAt: time.Now().Add(time.Hour), PriceCents: 1, PayWindow: time.Minute}); err != nil {
		t.Fatal(err)
	}
	apis := []*Refusals{NewRefusals(), NewRefusals()}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := apis[g%2]
			for i := range 500 {
				r.Count(1, []string{"sold_out", "limit_exceeded", "not_admitted", "rate_limited", "busy"}[i%5])
				r.Count(99, "sale_ended") // no such sale in Redis
				r.Count(archived, "sale_ended")
			}
		}()
	}
	wg.Wait()
	for _, r := range apis {
		r.Flush(ctx, rdb, f)
	}
	got, err := rdb.HGetAll(ctx, refusedKey(1)).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"sold_out": "800", "limit_exceeded": "800", "not_admitted": "800", "rate_limited": "800", "busy": "800"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusals in Redis (-want +got):\n%s", diff)
	}
	if n, _ := rdb.Exists(ctx, refusedKey(99)).Result(); n != 0 {
		t.Error("a sale Redis does not hold got a key of refusals")
	}
	var k kept
	if err := db.Take(&k, archived).Error; err != nil || k.Refused != `{"sale_ended":4002}` {
		t.Errorf("the archived sale's kept refusals: %q, %v; want 4002 sale_ended (2 kept, 4000 since)", k.Refused, err)
	}
	var rows int64
	if err := db.Model(&kept{}).Where("activity_id = ?", 99).Count(&rows).Error; err != nil || rows != 0 {
		t.Errorf("a sale MySQL does not keep: %d rows, %v; want none", rows, err)
	}

	// Redis stopped: the counts wait for the next flush.
	apis[0].Count(1, "sold_out")
	srv.Kill()
	fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	apis[0].Flush(fctx, rdb, f)
	cancel()
	srv.Start()
	for deadline := time.Now().Add(10 * time.Second); rdb.Ping(ctx).Err() != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("redis not back within 10 s")
		}
	}
	apis[0].Flush(ctx, rdb, f)
	if n, _ := rdb.HGet(ctx, refusedKey(1), "sold_out").Int(); n != 801 {
		t.Errorf("sold_out %d after a failed flush and a good one, want 801", n)
	}
}

// A process counts at most maxSales sales: the sale of a path is the client's. Once
// full, a flush forgets the sales without refusals since the last.
func TestRefusalsBounded(t *testing.T) {
	r := NewRefusals()
	r.maxSales = 3
	for id := range int64(10) {
		r.Count(id, "unauthorized")
	}
	if got := len(r.take()); got != 3 {
		t.Errorf("%d sales counted, want 3", got)
	}
	r.Count(42, "sold_out") // full: not counted
	r.Count(1, "an_uncommon_code")
	if got := r.take(); len(got) != 1 || got[1]["an_uncommon_code"] != 1 {
		t.Errorf("with the bound reached: %v, want sale 1's one refusal", got)
	}
	r.Count(42, "sold_out") // sales 0 and 2 were forgotten: room again
	if got := r.take(); got[42]["sold_out"] != 1 {
		t.Errorf("after idle sales were forgotten: %v, want sale 42's", got)
	}
}

func BenchmarkRefusalsCount(b *testing.B) {
	r := NewRefusals()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Count(7, "sold_out")
		}
	})
}
