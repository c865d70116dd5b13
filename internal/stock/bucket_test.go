package stock

import (
	"fmt"
	"math"
	"testing"

	"seckill/internal/buyer"
)

// The tags of a sale's buckets spread them over the masters of a cluster laid out as
// redis-cli --cluster create lays out 3 or 4 masters (equal contiguous ranges): K equal
// to the masters, or dividing their number, on K masters; a multiple of them, evenly.
// Buyers spread evenly over their home buckets.
func TestBucketTagsAndHomes(t *testing.T) {
	masterOf := func(slot, masters int) int { // the ranges redis-cli gives M masters
		for m := range masters {
			if slot < (m+1)*clusterSlots/masters {
				return m
			}
		}
		return masters - 1
	}
	for _, masters := range []int{3, 4} {
		for _, k := range []int{2, masters, 2 * masters, 64} {
			for act := int64(1); act <= 200; act++ {
				per := map[int]int{}
				seen := map[string]bool{}
				for _, b := range (Bucket{act: act, k: k}).All() {
					tag := b.tag()
					if seen[tag] {
						t.Fatalf("K=%d sale %d: tag %q twice", k, act, tag)
					}
					seen[tag] = true
					per[masterOf(slotOf(tag), masters)]++
				}
				switch {
				case masters%k == 0 && len(per) != k: // K masters, one bucket each
					t.Fatalf("%d masters, K=%d, sale %d: buckets per master %v, want one on each of %d", masters, k, act, per, k)
				case k%masters == 0:
					for m := range masters {
						if per[m] != k/masters {
							t.Fatalf("%d masters, K=%d, sale %d: buckets per master %v, want %d each", masters, k, act, per, k/masters)
						}
					}
				}
			}
		}
	}
	for _, k := range []int{2, 3, 8, 64} {
		for _, kind := range []struct {
			name string
			of   func(int64) buyer.ID
		}{
			{"decimal", buyer.Of},
			{"auth0", func(u int64) buyer.ID { return buyer.ID(fmt.Sprintf("auth0|%024x", u)) }},
			{"UUID", func(u int64) buyer.ID { return buyer.ID(fmt.Sprintf("8f14e45f-ceea-467f-a0e7-%012x", u)) }},
		} {
			const users = 30000
			count := make([]int, k)
			for u := int64(1); u <= users; u++ {
				count[HomeBucket(kind.of(u), k)]++
			}
			for b, n := range count {
				// consecutive ids spread within 10%; hashed keys as a random draw would, within
				// five standard deviations
				want := users / k
				off := want / 10
				if kind.name != "decimal" {
					off = int(5 * math.Sqrt(float64(want)))
				}
				if n < want-off || n > want+off {
					t.Errorf("K=%d: bucket %d is home to %d of %d %s buyers, want about %d", k, b, n, users, kind.name, want)
				}
			}
		}
	}
	if got := slotOf("123456789"); got != 0x31C3%clusterSlots { // CRC16/XMODEM's check value
		t.Errorf("slot of 123456789 = %d, want %d", got, 0x31C3%clusterSlots)
	}
}
