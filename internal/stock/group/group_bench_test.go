package group_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// BenchmarkOpenGroups measures the buyers' list of open groups (Groups.OpenGroups) on a
// sale with 100, 1,000 and 3,000 open groups of 1 to 10 members: the default list of
// the 50 fullest, against a list of every open group read with one HMGET per open group,
// which the fullest-first sorted set spares.
//
//	go test -run - -bench OpenGroups ./internal/stock
func BenchmarkOpenGroups(b *testing.B) {
	for _, open := range []int{100, 1000, 3000} {
		s := stocktest.New(testutil.StartRedis(b).Client(b))
		newGroupSale(b, s, 1, 1_000_000, 100, 0)
		at := stocktest.T0.Add(time.Second)
		rng := rand.New(rand.NewPCG(1, 2))
		user := int64(0)
		for g := range open {
			id := fmt.Sprintf("g%d", g)
			for i := range 1 + rng.IntN(10) {
				user++
				if _, err := s.Reserve(context.Background(), seat(1, user, id, i == 0, at)); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, limit := range []int{50, open} {
			b.Run(fmt.Sprintf("open=%d/limit=%d", open, limit), func(b *testing.B) {
				for b.Loop() {
					gs, err := s.OpenGroups(context.Background(), 1, at, limit)
					if err != nil || len(gs) != limit {
						b.Fatalf("%d groups, %v; want %d", len(gs), err, limit)
					}
				}
			})
		}
	}
}
