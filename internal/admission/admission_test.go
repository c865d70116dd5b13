package admission_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"seckill/internal/admission"
)

func TestBounds(t *testing.T) {
	tests := []struct {
		name           string
		total, perSale int
		enters         []int64 // sales, in order
		want           []bool
	}{
		{"no bounds", 0, 0, []int64{1, 1, 1, 2}, []bool{true, true, true, true}},
		{"total", 2, 0, []int64{1, 2, 3}, []bool{true, true, false}},
		{"per sale", 0, 2, []int64{1, 1, 1, 2, 2, 2}, []bool{true, true, false, true, true, false}},
		{"both, total first", 3, 2, []int64{1, 1, 2, 2, 3}, []bool{true, true, true, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := admission.New(tt.total, tt.perSale)
			var in []int64
			for i, sale := range tt.enters {
				got := g.Enter(sale)
				if got != tt.want[i] {
					t.Fatalf("enter %d (sale %d): %v, want %v", i, sale, got, tt.want[i])
				}
				if got {
					in = append(in, sale)
				}
			}
			if g.InFlight() != len(in) {
				t.Errorf("in flight %d, want %d", g.InFlight(), len(in))
			}
			// Leaving frees the place: the first refused sale gets in now.
			for _, sale := range in {
				g.Leave(sale)
			}
			if g.InFlight() != 0 {
				t.Errorf("in flight %d after every leave, want 0", g.InFlight())
			}
			for i, sale := range tt.enters {
				if !tt.want[i] && !g.Enter(sale) {
					t.Errorf("sale %d refused with nothing in flight", sale)
				}
			}
		})
	}
}

// Many goroutines entering and leaving at once never exceed either bound, and every
// place comes back.
func TestConcurrent(t *testing.T) {
	const total, perSale, sales = 40, 15, 5
	g := admission.New(total, perSale)
	var inAll atomic.Int64
	var inSale [sales]atomic.Int64
	var peakAll, peakSale, admitted, refused atomic.Int64
	raise := func(peak *atomic.Int64, v int64) {
		for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
		}
	}
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				sale := int64((w + i) % sales)
				if !g.Enter(sale) {
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				raise(&peakAll, inAll.Add(1))
				raise(&peakSale, inSale[sale].Add(1))
				inSale[sale].Add(-1)
				inAll.Add(-1)
				g.Leave(sale)
			}
		}()
	}
	wg.Wait()
	if peakAll.Load() > total || peakSale.Load() > perSale {
		t.Errorf("peak in flight %d (bound %d), peak of one sale %d (bound %d)", peakAll.Load(), total, peakSale.Load(), perSale)
	}
	if admitted.Load()+refused.Load() != 64*2000 || admitted.Load() == 0 {
		t.Errorf("admitted %d, refused %d of %d", admitted.Load(), refused.Load(), 64*2000)
	}
	if g.InFlight() != 0 {
		t.Errorf("in flight %d at the end, want 0", g.InFlight())
	}
	for s := range int64(sales) {
		for range perSale {
			if !g.Enter(s) {
				t.Fatalf("sale %d: a place was not given back", s)
			}
		}
		for range perSale {
			g.Leave(s)
		}
	}
}
