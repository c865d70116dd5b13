package accesscode_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/codes"
	"seckill/internal/testutil"
)

// BenchmarkCodeMemory reports what an access code of 13 characters (as made here)
// holds in Redis, free and once a buyer owns it (docs/sizing.md): used_memory before
// and after b.N codes, divided by b.N. The uses not yet recorded (codes:claims) hold
// about as much again for the second until the worker records them.
//
//	go test -run '^$' -bench CodeMemory -benchtime 100000x ./internal/accesscode/
func BenchmarkCodeMemory(b *testing.B) {
	ctx := context.Background()
	rdb := testutil.StartRedis(b).Client(b)
	s := codes.New(stock.New(rdb))
	given := make([]string, b.N)
	for i := range given {
		given[i] = fmt.Sprintf("7KQ9M3XH%05d", i)
	}
	before := testutil.UsedMemory(b, rdb)
	if err := s.Put(ctx, 1, given); err != nil {
		b.Fatal(err)
	}
	free := testutil.UsedMemory(b, rdb)
	b.ReportMetric(float64(free-before)/float64(b.N), "bytes/free-code")
	now := time.Now().UnixMilli()
	for i, code := range given {
		if err := claimScript.Run(ctx, rdb, []string{stock.CodesKey(stock.One(1)), stock.CodeClaimsKey(stock.One(1))}, code,
			buyer.Of(int64(i+1)).Key(), now).Err(); err != nil {
			b.Fatal(err)
		}
	}
	if err := rdb.Del(ctx, stock.CodeClaimsKey(stock.One(1))).Err(); err != nil { // recorded, as the worker leaves it
		b.Fatal(err)
	}
	b.ReportMetric(float64(testutil.UsedMemory(b, rdb)-before)/float64(b.N), "bytes/owned-code")
}
