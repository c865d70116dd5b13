package main

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	buyerid "seckill/internal/buyer"
	"seckill/internal/outage"
	seckillsale "seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// sale is one activity of a test database, with helpers that write its orders through
// the store (as the worker does) and bend them with SQL on the contract's columns only.
type sale struct {
	t     testing.TB
	db    *sql.DB
	st    *store.Store
	a     store.Activity
	seq   int
	stock int64
}

func newSale(t *testing.T, db *testutil.MySQLDB, sqlDB *sql.DB, stock int64, limit int, variants ...int64) *sale {
	t.Helper()
	st := store.New(db.Gorm, seckillsale.EventViews{})
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Activity{Name: "audit", ProductName: "unit", PriceCents: 100, StockTotal: stock,
		PerUserLimit: limit, StartsAt: now, EndsAt: now.Add(time.Hour), PayWindowSeconds: 900}
	for i, n := range variants {
		a.Variants = append(a.Variants, store.Variant{Idx: i, Name: fmt.Sprint("V", i), StockTotal: n})
	}
	if err := st.Activities.CreateActivity(context.Background(), &a, func(store.Activity) error { return nil }); err != nil {
		t.Fatalf("create activity: %v", err)
	}
	return &sale{t: t, db: sqlDB, st: st, a: a, stock: stock}
}

// persist stores an order of qty units for the buyer and returns its id and status.
func (s *sale) persist(who string, qty int) (string, string) {
	s.t.Helper()
	return s.persistVariant(who, qty, -1)
}

// persistVariant is persist of an order of the variant of index variant (-1: none).
func (s *sale) persistVariant(who string, qty, variant int) (string, string) {
	s.t.Helper()
	s.seq++
	now := time.Now().UTC().Truncate(time.Millisecond).Add(time.Duration(s.seq) * time.Millisecond)
	id := fmt.Sprintf("a%d-o%d", s.a.ID, s.seq)
	o := store.NewOrder{Limit: s.a.PerUserLimit, Order: store.Order{ID: id, ActivityID: s.a.ID, Buyer: buyerid.ID(who),
		Quantity: qty, AmountCents: 100 * int64(qty), CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute)}}
	if variant >= 0 {
		o.VariantIndex = &variant
	}
	out, err := s.st.Batches.PersistBatch(context.Background(), []store.NewOrder{o}, outage.Outages{})
	if err != nil {
		s.t.Fatalf("persist: %v", err)
	}
	return id, out[id].Status
}

func (s *sale) exec(query string, args ...any) {
	s.t.Helper()
	if _, err := s.db.Exec(query, args...); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
}

func (s *sale) audit(l *ledger) report {
	s.t.Helper()
	r, err := auditSale(context.Background(), s.db, s.a.ID, l)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// figures are the audit's counts that must be 0 after a correct sale.
type figures struct {
	Oversold, Lost, Refused, Phantom, KeyDuplicates, Repeated, Mismatched, OverLimit, Unanswered int
	VariantsOversold                                                                             int
	HeldUnits                                                                                    int64
	OK, Inconclusive                                                                             bool
}

func figuresOf(r report) figures {
	return figures{Oversold: int(r.Oversold), VariantsOversold: len(r.VariantsOversold), Lost: len(r.Lost),
		Refused: len(r.Refused), Phantom: len(r.Phantom),
		KeyDuplicates: len(r.KeyDuplicates), Repeated: r.Repeated, Mismatched: len(r.Mismatched),
		OverLimit: len(r.OverLimit), Unanswered: r.Unanswered, HeldUnits: r.HeldUnits,
		OK: r.OK(), Inconclusive: r.Inconclusive()}
}

func TestAudit(t *testing.T) {
	db := testutil.MySQL(t)
	sqlDB, err := sql.Open("mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })

	tests := []struct {
		name  string
		stock int64
		limit int
		// variants, if set, make the sale one of variants V0, V1, ... of these units
		// (stock is their sum).
		variants []int64
		// sell stores orders and returns what the API answered about them.
		sell func(s *sale, l *ledger)
		want figures
	}{
		{"a clean sale", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 2)
			l.record(id1, ack{Buyer: "1", Quantity: 2, Key: "k1"}, true)
			l.record(id1, ack{Buyer: "1", Quantity: 2, Key: "k1"}, false) // a replay: 200, same order
			id2, _ := s.persist("2", 1)
			l.record(id2, ack{Buyer: "2", Quantity: 1}, true)
		}, figures{HeldUnits: 3, OK: true}},

		{"an acknowledged order stored as failed is refused; it and a cancelled one hold nothing", 4, 5, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 2)
			id3, _ := s.persist("3", 2)
			id2, status := s.persist("2", 1) // over stock: MySQL stores it as failed
			if status != "failed" {
				t.Fatalf("order over stock stored as %q, want failed", status)
			}
			s.exec("UPDATE orders SET status = 'cancelled' WHERE id = ?", id1)
			for _, o := range []struct {
				id, buyer string
				qty       int64
			}{{id1, "1", 2}, {id2, "2", 1}, {id3, "3", 2}} {
				l.record(o.id, ack{Buyer: o.buyer, Quantity: o.qty}, true)
			}
		}, figures{Refused: 1, HeldUnits: 2}},

		{"oversold", 3, 5, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 2)
			id2, _ := s.persist("2", 1)
			s.exec("UPDATE orders SET quantity = 3 WHERE id = ?", id2)
			l.record(id1, ack{Buyer: "1", Quantity: 2}, true)
			l.record(id2, ack{Buyer: "2", Quantity: 3}, true)
		}, figures{Oversold: 2, HeldUnits: 5}},

		{"lost: a 202 MySQL never got", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 1)
			l.record(id1, ack{Buyer: "1", Quantity: 1}, true)
			l.record("never-stored", ack{Buyer: "2", Quantity: 1}, true)
		}, figures{Lost: 1, HeldUnits: 1}},

		{"lost: a replay's order MySQL never got", 10, 2, nil, func(s *sale, l *ledger) {
			l.record("never-stored", ack{Buyer: "2", Quantity: 1, Key: "k"}, false)
		}, figures{Lost: 1}},

		{"duplicated: an order no answer named", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 1)
			s.persist("2", 1)
			l.record(id1, ack{Buyer: "1", Quantity: 1}, true)
		}, figures{Phantom: 1, HeldUnits: 2}},

		{"duplicated: one key, two orders", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 1)
			id2, _ := s.persist("1", 1)
			l.record(id1, ack{Buyer: "1", Quantity: 1, Key: "same"}, true)
			l.record(id2, ack{Buyer: "1", Quantity: 1, Key: "same"}, false)
		}, figures{KeyDuplicates: 1, HeldUnits: 2}},

		{"buyers that differ in letter case, a UUID and an auth0 subject: each its own limit", 10, 2, nil, func(s *sale, l *ledger) {
			for _, who := range []string{"auth0|AbC", "auth0|abc", "7c9e6679-7425-40de-8000-000000000001"} {
				id, _ := s.persist(who, 2)
				l.record(id, ack{Buyer: who, Quantity: 2, Key: "k"}, true)
			}
		}, figures{HeldUnits: 6, OK: true}},

		{"mismatched: an order of another buyer than the one answered", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("auth0|abc", 1)
			l.record(id1, ack{Buyer: "auth0|AbC", Quantity: 1}, true)
		}, figures{Mismatched: 1, HeldUnits: 1}},

		{"the same key of two users is two keys", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 1)
			id2, _ := s.persist("2", 1)
			l.record(id1, ack{Buyer: "1", Quantity: 1, Key: "same"}, true)
			l.record(id2, ack{Buyer: "2", Quantity: 1, Key: "same"}, true)
		}, figures{HeldUnits: 2, OK: true}},

		{"duplicated: two 202s for one order", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 1)
			l.record(id1, ack{Buyer: "1", Quantity: 1}, true)
			l.record(id1, ack{Buyer: "1", Quantity: 1}, true)
		}, figures{Repeated: 1, HeldUnits: 1}},

		{"over the limit", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 2)
			id2, _ := s.persist("2", 1)
			s.exec("UPDATE orders SET buyer = '1', user_id = 1 WHERE id = ?", id2)
			l.record(id1, ack{Buyer: "1", Quantity: 2}, true)
			l.record(id2, ack{Buyer: "1", Quantity: 1}, true)
		}, figures{OverLimit: 1, HeldUnits: 3}},

		{"mismatched: not what the buyer asked", 10, 2, nil, func(s *sale, l *ledger) {
			id1, _ := s.persist("1", 2)
			l.record(id1, ack{Buyer: "1", Quantity: 1}, true)
		}, figures{Mismatched: 1, HeldUnits: 2}},

		{"inconclusive: a purchase without an answer", 10, 2, nil, func(s *sale, l *ledger) {
			s.persist("1", 1)
			l.noteUnanswered()
		}, figures{Phantom: 1, Unanswered: 1, HeldUnits: 1, Inconclusive: true}},

		{"a clean sale of variants", 5, 3, []int64{2, 3}, func(s *sale, l *ledger) {
			for _, o := range []struct {
				who     string
				qty     int
				variant int
			}{{"1", 2, 0}, {"2", 2, 1}, {"1", 1, 1}} {
				id, _ := s.persistVariant(o.who, o.qty, o.variant)
				l.record(id, ack{Buyer: o.who, Quantity: int64(o.qty), Variant: fmt.Sprint("V", o.variant)}, true)
			}
		}, figures{HeldUnits: 5, OK: true}},

		{"a variant oversold while the sale is not", 10, 5, []int64{2, 8}, func(s *sale, l *ledger) {
			id, _ := s.persistVariant("1", 2, 0)
			s.exec("UPDATE orders SET quantity = 3 WHERE id = ?", id)
			l.record(id, ack{Buyer: "1", Quantity: 3, Variant: "V0"}, true)
		}, figures{VariantsOversold: 1, HeldUnits: 3}},

		{"mismatched: another variant than the one asked", 10, 5, []int64{5, 5}, func(s *sale, l *ledger) {
			id, _ := s.persistVariant("1", 1, 0)
			l.record(id, ack{Buyer: "1", Quantity: 1, Variant: "V1"}, true)
		}, figures{Mismatched: 1, HeldUnits: 1}},

		{"over the limit across variants", 10, 2, []int64{5, 5}, func(s *sale, l *ledger) {
			id1, _ := s.persistVariant("1", 2, 0)
			id2, _ := s.persistVariant("2", 1, 1)
			s.exec("UPDATE orders SET buyer = '1', user_id = 1 WHERE id = ?", id2)
			l.record(id1, ack{Buyer: "1", Quantity: 2, Variant: "V0"}, true)
			l.record(id2, ack{Buyer: "1", Quantity: 1, Variant: "V1"}, true)
		}, figures{OverLimit: 1, HeldUnits: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSale(t, db, sqlDB, tt.stock, tt.limit, tt.variants...)
			l := newLedger()
			tt.sell(s, l)
			r := s.audit(l)
			if got := figuresOf(r); got != tt.want {
				var b strings.Builder
				r.print(&b)
				t.Errorf("audit figures:\n got %+v\nwant %+v\nreport:\n%s", got, tt.want, b.String())
			}
		})
	}
}

func TestWaitPersisted(t *testing.T) {
	db := testutil.MySQL(t)
	sqlDB, err := sql.Open("mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	ctx := context.Background()
	s := newSale(t, db, sqlDB, 10, 5)
	id1, _ := s.persist("1", 1)

	// An order that arrives while it waits.
	late := make(chan string, 1)
	g := testutil.NewGoroutines(t)
	on := *s // the sale, for the goroutine
	on.t = g
	go func() {
		defer close(late)
		// The order comes 200 ms into the wait: what is tested is a wait that sees it come.
		time.Sleep(200 * time.Millisecond)
		id, _ := on.persist("2", 1)
		late <- id
	}()
	want := map[string]bool{id1: true, fmt.Sprintf("a%d-o%d", s.a.ID, 2): true}
	start := time.Now()
	at, all, err := waitPersisted(ctx, sqlDB, s.a.ID, want, 10*time.Millisecond, time.Now().Add(30*time.Second))
	got := <-late
	g.Report()
	if !want[got] {
		t.Fatalf("late order id %s, want one of %v", got, want)
	}
	if err != nil || !all {
		t.Fatalf("waitPersisted = %v, %v, want all stored", all, err)
	}
	if at.Before(start) {
		t.Errorf("all stored at %v, before the wait began at %v", at, start)
	}

	// An order that never arrives: it gives up at the deadline.
	want["never"] = true
	_, all, err = waitPersisted(ctx, sqlDB, s.a.ID, want, 10*time.Millisecond, time.Now().Add(300*time.Millisecond))
	if err != nil || all {
		t.Fatalf("waitPersisted with a missing order = %v, %v, want false, nil", all, err)
	}
}

// TestCrowdAgainstStack runs both modes, small, against the real api and worker.
func TestCrowdAgainstStack(t *testing.T) {
	stack := testutil.StartStack(t)
	sqlDB, err := sql.Open("mysql", stack.MySQL.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	ctx := context.Background()
	a := newAPI([]string{stack.URL}, 20, 10*time.Second, testutil.JWTSecret)

	var out strings.Builder
	ok, err := runAudit(ctx, &out, a, sqlDB, crowdConfig{Users: 150, Attempts: 3, Conns: 20, Stock: 200,
		Limit: 3, MaxQty: 2, Together: 0.5, Replay: 0.5, NoKey: 0.2, FirstUser: 100, Seed: 1,
		Drain: time.Minute})
	if err != nil || !ok {
		t.Fatalf("audit = %v, %v; want a pass:\n%s", ok, err, out.String())
	}
	for _, want := range []string{"202: ", "200: ", "409 limit_exceeded: ", "audit: PASS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit output has no %q:\n%s", want, out.String())
		}
	}

	// The waitlist: every unit of a bought-out sale returned while a crowd retries it.
	out.Reset()
	ok, err = runWaitlist(ctx, &out, a, sqlDB, waitlistConfig{Stock: 30, Waiting: 50, Retriers: 5, Conns: 10,
		FirstUser: 7000, Drain: time.Minute})
	if err != nil || !ok {
		t.Fatalf("waitlist = %v, %v; want a pass:\n%s", ok, err, out.String())
	}
	for _, want := range []string{"30 units returned by cancels: 30 offered (30 orders marked offered in MySQL, all there: true)",
		"offered out of line 0, units to the crowd 0", "waitlist: PASS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("waitlist output has no %q:\n%s", want, out.String())
		}
	}

	// A sale of four variants, audited per variant: the crowd wants more than each has.
	out.Reset()
	ok, err = runAudit(ctx, &out, a, sqlDB, crowdConfig{Users: 150, Attempts: 3, Conns: 20, Stock: 120,
		Limit: 3, MaxQty: 2, Together: 0.5, Replay: 0.5, NoKey: 0.2, FirstUser: 5000, Seed: 2, Variants: 4,
		Drain: time.Minute})
	if err != nil || !ok {
		t.Fatalf("audit of a sale of variants = %v, %v; want a pass:\n%s", ok, err, out.String())
	}
	for _, want := range []string{"in 4 variants", "409 sold_out: ", "by variant   V0 30/30, V1 30/30, V2 30/30, V3 30/30",
		"var. oversold 0", "audit: PASS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit output of a sale of variants has no %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	ok, err = runRatios(ctx, &out, a, sqlDB, ratiosConfig{Conns: 10, Phase: 300 * time.Millisecond,
		Slice: 100 * time.Millisecond, Buyers: 2000, FirstUser: 10_000, Drain: time.Minute,
		Work: newWorkWatch(sqlDB, stack.Redis.Addr),
		Group: groupConfig{Size: 3, Window: time.Minute, Seats: 2, Open: 0.2, Refresh: 200 * time.Millisecond,
			Buyers: 2000, FirstUser: 12_000}})
	if err != nil || !ok {
		t.Fatalf("ratios = %v, %v; want ok:\n%s", ok, err, out.String())
	}
	for _, want := range []string{"409 sold_out: ", "successful purchases/s vs healthz",
		"audit of sale", "oversold 0, lost 0, refused 0, duplicated 0, over limit 0, mismatched 0",
		"open 202: ", "join 202: ", "list 200: ", "group seats/s vs purchases/s",
		"over size 0, miscounted 0, twice in a group 0, over the cap 0, without a group 0, unsettled 0, sold minus held units 0",
		"contradicting 202s 0, unexpected answers 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ratios output has no %q:\n%s", want, out.String())
		}
	}
	// Every order is a row written in MySQL, and a reserve script ran for it in Redis.
	if m := regexp.MustCompile(`mysql per order: rows read [0-9.]+, written ([0-9.]+)`).FindStringSubmatch(out.String()); m == nil {
		t.Errorf("ratios output has no MySQL work per order:\n%s", out.String())
	} else if written, _ := strconv.ParseFloat(m[1], 64); written < 1 {
		t.Errorf("rows written per order = %s, want at least 1 (the order's row)", m[1])
	}
	if !regexp.MustCompile(`redis per order: [0-9.]+ script calls, [0-9.]+ µs in them \(their commands' time included\); commands, in scripts or not: .*hset`).MatchString(out.String()) {
		t.Errorf("ratios output has no Redis work per order with its scripts:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}
