package auth_test

import (
	"testing"
	"time"

	"seckill/internal/auth"
	"seckill/internal/buyer"
)

// Verifying a token seen for the first time (every buyer's first request) against one
// answered from the cache: go test -run '^$' -bench Verify ./internal/auth/
func BenchmarkVerify(b *testing.B) {
	now := time.Now()
	tokens := make([]string, 100_000)
	for i := range tokens {
		tokens[i], _ = auth.Sign(secret, buyer.Of(int64(i+1)), false, time.Hour, now)
	}
	b.Run("new token", func(b *testing.B) {
		v := auth.NewVerifier(secret, nil)
		for i := 0; b.Loop(); i++ {
			if _, err := v.Verify(tokens[i%len(tokens)], now); err != nil {
				b.Fatal(err)
			}
			if i%len(tokens) == len(tokens)-1 {
				v = auth.NewVerifier(secret, nil)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		v := auth.NewVerifier(secret, nil)
		_, _ = v.Verify(tokens[0], now)
		for b.Loop() {
			if _, err := v.Verify(tokens[0], now); err != nil {
				b.Fatal(err)
			}
		}
	})
}
