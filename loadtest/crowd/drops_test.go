package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// TestDropsAgainstStack runs the drops mode, small, against the real API and worker
// (its retention short): every sale is archived, answers from MySQL, and Redis ends
// where it began.
func TestDropsAgainstStack(t *testing.T) {
	stack := testutil.StartStack(t, "SECKILL_SALE_RETENTION=1s")
	a := newAPI([]string{stack.URL}, 8, 10*time.Second, testutil.JWTSecret)
	var out strings.Builder
	ok, err := runDrops(context.Background(), &out, a, dropsConfig{Sales: 4, Buyers: 3, Open: 3 * time.Second,
		Within: time.Minute, FirstUser: 500, RedisAddr: stack.Redis.Addr})
	if err != nil || !ok {
		t.Fatalf("drops = %v, %v; want a pass:\n%s", ok, err, out.String())
	}
	for _, want := range []string{"drops: 4 sales of 3 buyers run to their end", "drops: every sale archived", "drops: Redis keys", "drops: PASS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("drops output has no %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}
