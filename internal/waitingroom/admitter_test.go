package waitingroom_test

import (
	"context"
	"testing"
	"time"

	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
)

// countingRooms lists rooms and counts how often it was asked.
type countingRooms struct {
	ids   []int64
	calls int
}

func (r *countingRooms) WaitingRooms(context.Context, time.Time) ([]int64, error) {
	r.calls++
	return r.ids, nil
}

// TestAdmitterReadsRoomsOncePerRefresh: the worker runs the admitter every 100 ms; the
// list of rooms is read again only after Refresh, also when it is empty (no sale has a
// room: the common case, which must not cost a MySQL query every run), and a room
// listed later is advanced after the next refresh.
func TestAdmitterReadsRoomsOncePerRefresh(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	f := newFixture(t, rdb)
	rooms := &countingRooms{}
	a := waitingroom.NewAdmitter(f.rooms, rooms)
	a.Refresh = 300 * time.Millisecond
	for range 5 {
		if _, err := a.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if rooms.calls != 1 {
		t.Fatalf("5 runs within the refresh read the (empty) list %d times, want 1", rooms.calls)
	}
	f.sale(1, 10, room(100))
	f.clock.set(t0.Add(-time.Minute))
	f.join(1, 42)
	f.clock.set(t0.Add(time.Second))
	rooms.ids = []int64{1}
	// The admitter reads its list of rooms once per Refresh: the period is the behaviour under
	// test.
	time.Sleep(a.Refresh)
	admitted, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rooms.calls != 2 || admitted != 1 {
		t.Fatalf("after the refresh: %d reads, %d admitted; want 2 reads and the one buyer admitted", rooms.calls, admitted)
	}
}
