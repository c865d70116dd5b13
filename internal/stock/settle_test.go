package stock

import (
	"context"
	"slices"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// A buyer's queued orders are the field q<user> of the users hash, written by the reserve
// script and taken out by the settle (and the roll-back): the buyer's list shows exactly
// the orders not settled yet, in the order they were made, and the field goes with the
// last of them, so the users hash keeps no list of a buyer with nothing queued.
func TestBuyersListOfQueuedOrders(t *testing.T) {
	s := New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	loadSale(t, s, 1, 10, 5)
	var mine []Reservation
	for range 3 {
		r := purchase(1, 7, 1)
		r.LockTTL = time.Millisecond // gone before the buyer's next purchase
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
		mine = append(mine, r)
		time.Sleep(5 * time.Millisecond)
	}
	other := purchase(1, 8, 2)
	if _, err := s.Reserve(ctx, other); err != nil {
		t.Fatal(err)
	}
	listed := func(user int64) []string {
		t.Helper()
		q, err := s.UserQueued(ctx, []int64{1}, user)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range q {
			ids = append(ids, o.OrderID)
		}
		return ids
	}
	if got, want := listed(7), []string{mine[0].OrderID, mine[1].OrderID, mine[2].OrderID}; !slices.Equal(got, want) {
		t.Fatalf("user 7's queued orders %v, want %v", got, want)
	}

	settle := func(rs ...Reservation) {
		t.Helper()
		var os []Settlement
		for _, r := range rs {
			os = append(os, Settlement{OrderID: r.OrderID, UserID: r.UserID})
		}
		if err := s.Settle(ctx, 1, os); err != nil {
			t.Fatal(err)
		}
	}
	settle(mine[0], other, mine[2])
	if got := listed(7); !slices.Equal(got, []string{mine[1].OrderID}) {
		t.Errorf("user 7's queued orders after two were settled: %v, want [%s]", got, mine[1].OrderID)
	}
	if got := listed(8); len(got) != 0 {
		t.Errorf("user 8's queued orders after their one was settled: %v", got)
	}
	settle(mine[1])
	fields, err := s.rdb.HKeys(ctx, usersKey(one(1))).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if f[0] == 'q' {
			t.Errorf("the users hash keeps %s with nothing queued (fields %v)", f, fields)
		}
	}
}
