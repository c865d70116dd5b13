package waitingroom_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
)

// The line's counts are exact, and every admitted buyer's wait is counted once: from the
// start for a buyer who joined before it, from the join for one who joined after.
func TestCountsAndWaits(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	f.sale(1, 100, room(10))
	const early, late = 30, 5
	for u := int64(1); u <= early; u++ { // a minute before the start
		f.join(1, u)
	}
	f.clock.set(t0.Add(1500 * time.Millisecond)) // joined 1.5 s after the start
	for u := int64(early + 1); u <= early+late; u++ {
		f.join(1, u)
	}
	got, err := f.rooms.Counts(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := (waitingroom.Counts{Joined: early + late, JoinedBeforeStart: early, Waits: map[int64]int64{}}); !cmp.Equal(got, want) {
		t.Fatalf("before any admission: %+v, want %+v", got, want)
	}
	_, at := f.admitAll(1)
	got, err = f.rooms.Counts(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{}
	for u, ms := range at { // ms after t0
		if u > early {
			ms -= 1500
		}
		want[ms]++
	}
	if got.Joined != early+late || got.JoinedBeforeStart != early || got.Admitted != early+late || got.PassesExpired != 0 {
		t.Errorf("counts %+v, want %d joined, %d before the start, all admitted, no pass expired", got, early+late, early)
	}
	if st, err := f.rooms.ReadStatus(ctx, 1); err != nil || got.AdmittedThrough == 0 || got.AdmittedThrough != st.AdmittedThrough {
		t.Errorf("admitted through %d, the status' %d (%v); want the same, above 0", got.AdmittedThrough, st.AdmittedThrough, err)
	}
	if !cmp.Equal(got.Waits, want) {
		t.Errorf("waits (ms -> buyers) %v, want %v", got.Waits, want)
	}
	f.clock.add(2 * time.Minute) // every pass (a minute) expires unused
	if _, err := f.rooms.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.rooms.Counts(ctx, 1); got.PassesExpired != early+late {
		t.Errorf("passes expired %d, want %d", got.PassesExpired, early+late)
	}
	if n, _ := f.rdb.Exists(ctx, waitingroom.Keys(1)...).Result(); n == 0 {
		t.Error("Keys names none of the line's keys")
	}
}
