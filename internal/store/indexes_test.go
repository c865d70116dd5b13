package store_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/internal/buyer"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// Every statement the store runs on orders with a condition reads them through an
// index: on a table of 200,000 orders over sixteen sales (seedMix: a live one, a
// group-buy, one of variants, settled ones; created, due, paid, cancelled,
// return_pending, refunded, failed and grouping orders), each case calls the store as the service does, and every
// statement it sent that reads or changes orders is explained. The test fails when one
// reads orders by a full scan (EXPLAIN type ALL, or index: the whole of an index) or
// without a key, or sorts what it read where the case does not say it sorts (a sort
// over a whole sale that was not there before). Run with -v, it logs each statement's
// plan: what the schema's indexes serve, query by query.
//
//	go test -count=1 -run TestOrdersQueriesReadThroughIndexes -v ./internal/store/
func TestOrdersQueriesReadThroughIndexes(t *testing.T) {
	ctx := context.Background()
	testDB := testutil.MySQL(t)
	m := seedMix(t, testDB.Gorm)
	rec := &allSQL{Interface: logger.Discard}
	st := store.New(testDB.Gorm.Session(&gorm.Session{Logger: rec}), sale.EventViews{})
	now := time.Now()
	horizon := "ZZZZZZZZZZZZZZZZZZZZZZZZZZ"
	all := store.Access{Service: true}

	cases := []struct {
		name string
		// sorts: the statements sort what they read (a GROUP BY, or an ORDER BY no
		// index gives), as they did before migration 00024.
		sorts bool
		run   func() error
	}{
		{"GetOrder", false, func() error { _, err := st.Orders.GetOrder(ctx, m.created); return err }},
		{"OrdersByID", false, func() error { _, err := st.Orders.OrdersByID(ctx, []string{m.created, m.paid}); return err }},
		{"ListUserOrders", false, func() error { _, err := st.Orders.ListUserOrders(ctx, m.buyer, 50); return err }},
		{"SaleOrders, every order", false, func() error {
			_, err := st.Orders.SaleOrders(ctx, store.OrderRange{ActivityID: m.plain, After: m.created, Before: horizon, Limit: 100})
			return err
		}},
		{"SaleOrders, every order from the first", false, func() error {
			_, err := st.Orders.SaleOrders(ctx, store.OrderRange{ActivityID: m.plain, Limit: 1000})
			return err
		}},
		{"SaleOrders, of a status", false, func() error {
			_, err := st.Orders.SaleOrders(ctx, store.OrderRange{ActivityID: m.plain, Status: store.StatusRefunded,
				After: m.created, Before: horizon, Limit: 100})
			return err
		}},
		{"SaleOrders, a buyer's", false, func() error {
			_, err := st.Orders.SaleOrders(ctx, store.OrderRange{ActivityID: m.plain, Buyer: m.buyer, Limit: 100})
			return err
		}},
		{"CountOrders", true, func() error { _, err := st.Orders.CountOrders(ctx, m.plain); return err }},
		{"Figures, variants", true, func() error { _, err := st.Orders.Figures(ctx, m.variants); return err }},
		{"Holdings", false, func() error { _, err := st.Orders.Holdings(ctx, m.plain); return err }},
		{"OrderFacts", false, func() error { _, err := st.Orders.OrderFacts(ctx, m.plain); return err }},
		{"ListGroups", true, func() error { _, err := st.Orders.ListGroups(ctx, m.group, 100); return err }},
		{"KeyedOrder", true, func() error {
			_, err := st.Orders.KeyedOrder(ctx, m.plain, m.buyer, "k0", m.t0)
			if errors.Is(err, store.ErrNotFound) {
				err = nil
			}
			return err
		}},
		{"KeyedOrders", false, func() error { _, err := st.Upkeep.KeyedOrders(ctx, m.plain, m.t0); return err }},
		{"RebuildFacts, a sale of variants", true, func() error {
			_, err := st.Upkeep.RebuildFacts(ctx, m.variants, []string{m.created, "nothing"})
			return err
		}},
		{"RebuildFacts, a group-buy", false, func() error { _, err := st.Upkeep.RebuildFacts(ctx, m.group, nil); return err }},
		{"Unsettled, open", false, func() error { _, err := st.Upkeep.Unsettled(ctx, m.plain); return err }},
		{"Unsettled, settled", false, func() error { _, err := st.Upkeep.Unsettled(ctx, m.settled); return err }},
		{"LastFinal", false, func() error { _, err := st.Upkeep.LastFinal(ctx, m.settled); return err }},
		{"LastRefund", false, func() error { _, err := st.Upkeep.LastRefund(ctx, m.settled); return err }},
		{"SaleNames", false, func() error { _, err := st.Upkeep.SaleNames(ctx, m.group, m.t0); return err }},
		{"DueOrders", false, func() error { _, err := st.Lifecycle.DueOrders(ctx, now, 500); return err }},
		{"PendingReturns", false, func() error { _, err := st.Lifecycle.PendingReturns(ctx, 500); return err }},
		// The changes last: each changes a few of the orders the reads above read.
		{"PayOrder", false, func() error {
			_, _, err := st.Lifecycle.PayOrder(ctx, m.created, all, now, outage.Outages{})
			return err
		}},
		{"CancelOrder", false, func() error {
			_, _, err := st.Lifecycle.CancelOrder(ctx, m.created2, all, now)
			return err
		}},
		{"RefundOrder", false, func() error {
			_, _, err := st.Lifecycle.RefundOrder(ctx, m.paid, all, true, now)
			return err
		}},
		{"ExpireOrders", false, func() error {
			ids, err := st.Lifecycle.DueOrders(ctx, now, 20)
			if err == nil {
				_, _, err = st.Lifecycle.ExpireOrders(ctx, ids, now, outage.Outages{})
			}
			return err
		}},
		{"ReturnedToStock", false, func() error { return st.Lifecycle.ReturnedToStock(ctx, m.created2, m.paid) }},
		{"FailGroup", false, func() error {
			_, err := st.Lifecycle.FailGroup(ctx, m.group, m.openGroups[0], 3, now, now)
			return err
		}},
		{"PersistBatch, the seat that fills a group", false, func() error {
			g := m.openGroups[1]
			at := now.UTC().Truncate(time.Millisecond)
			o := store.NewOrder{Limit: 5, GroupSize: 3, GroupExpiresAt: at.Add(time.Minute), Order: store.Order{
				ID: "filler" + g, ActivityID: m.group, Buyer: "filler", Quantity: 1, AmountCents: 100, GroupID: &g,
				CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute)}}
			out, err := st.Batches.PersistBatch(ctx, []store.NewOrder{o}, outage.Outages{})
			if err == nil && out[o.ID].Status != store.StatusCreated {
				err = fmt.Errorf("the seat is %+v, want created: the group was to fill", out[o.ID])
			}
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.reset()
			if err := tc.run(); err != nil {
				t.Fatal(err)
			}
			stmts := rec.onOrders()
			if len(stmts) == 0 {
				t.Fatal("no statement on orders recorded")
			}
			for _, q := range stmts {
				for _, p := range explain(t, testDB.Gorm, q) {
					t.Logf("%-8s %-22s rows %-7d %s", p.Type, p.Key, p.Rows, p.Extra)
					switch {
					case p.Type == "ALL" || p.Type == "index" || p.Key == "":
						t.Errorf("orders read by a full scan (type %s, key %q): %s", p.Type, p.Key, q)
					case !tc.sorts && strings.Contains(p.Extra, "filesort"):
						t.Errorf("orders sorted after the read (%s): %s", p.Extra, q)
					}
				}
				t.Logf("  %s", q)
			}
		})
	}
	// DueOrders reads NOT return_pending: the changes above (each one that sets it among
	// them) leave no order return_pending but a cancelled or refunded one.
	var wrong int64
	if err := testDB.Gorm.Raw("SELECT COUNT(*) FROM orders WHERE return_pending AND status NOT IN ('cancelled', 'refunded')").
		Scan(&wrong).Error; err != nil || wrong != 0 {
		t.Errorf("%d orders return_pending neither cancelled nor refunded (%v), want none", wrong, err)
	}
}

// mix is what seedMix wrote: the sales, and orders and buyers of them the cases use.
type mix struct {
	t0                              time.Time
	plain, group, variants, settled int64
	created, created2, paid         string // orders of the plain sale
	buyer                           buyer.ID
	openGroups                      []string // open groups of the group-buy, two seats each
}

// seedMix writes sixteen sales and 200,000 orders of them, and what the guards and
// totals of the changes need (activities.sold, activity_variants.sold, user_purchases),
// then ANALYZE TABLE, so queries are planned as on a table that grew slowly. Most of a
// table's orders are of sales that are over: no sale here has more than a fifth of them.
//   - plain, 40,000 orders, one every 40 ms from 20 minutes ago with a pay window of 15
//     minutes (the first fifth of the created due): by id, half paid, a quarter
//     created, three in twenty cancelled (one in a hundred return_pending), one in
//     twenty failed, one in twenty refunded (half restocked, a tenth of them
//     return_pending); every third with an Idempotency-Key; 8,000 buyers.
//   - group, 20,000 orders of groups of three: one group in ten open (two seats taken,
//     grouping), one in ten failed (cancelled), the others complete (paid, created).
//   - variants, 10,000 orders over three variants, a third cancelled return_pending.
//   - settled, 10,000 orders, paid, cancelled or refunded, none return_pending.
//   - twelve sales of the day before, 10,000 orders each, settled as the one above.
func seedMix(t *testing.T, db *gorm.DB) mix {
	t.Helper()
	ctx := context.Background()
	st := store.New(db, sale.EventViews{})
	t0 := time.Now().UTC().Add(-20 * time.Minute).Truncate(time.Millisecond)
	m := mix{t0: t0}
	type seed struct {
		id   *int64
		kind string
		vars []store.Variant
	}
	var past [12]int64
	sales := []seed{{&m.plain, "sale", nil}, {&m.group, "group", nil},
		{&m.variants, "sale", []store.Variant{{Idx: 0, Name: "red", StockTotal: 1e6}, {Idx: 1, Name: "green", StockTotal: 1e6},
			{Idx: 2, Name: "blue", StockTotal: 1e6}}}, {&m.settled, "sale", nil}}
	for i := range past {
		sales = append(sales, seed{&past[i], "sale", nil})
	}
	for _, s := range sales {
		a := store.Activity{Name: s.kind, ProductName: "p", PriceCents: 100, StockTotal: 1e6, PerUserLimit: 100,
			StartsAt: t0, EndsAt: t0.Add(24 * time.Hour), PayWindowSeconds: 900, Kind: s.kind, Variants: s.vars}
		if s.kind == "group" {
			size, window := 3, 600
			a.GroupSize, a.GroupWindowSeconds = &size, &window
		}
		if err := st.Activities.CreateActivity(ctx, &a, func(store.Activity) error { return nil }); err != nil {
			t.Fatal(err)
		}
		*s.id = a.ID
	}
	stamp := func(d string) string {
		return fmt.Sprintf("TIMESTAMPADD(MICROSECOND, %s, '%s')", d, t0.Format("2006-01-02 15:04:05.000"))
	}
	created := stamp("seq * 40000")       // one order every 40 ms
	expires := stamp("seq * 40000 + 9e8") // 15 minutes later
	id := func(act int64) string { return fmt.Sprintf("CONCAT(LPAD(seq, 26, '0'), %d)", act) }
	insert := "INSERT INTO orders (id, activity_id, buyer, quantity, amount_cents, status, created_at, expires_at, " +
		"persisted_at, paid_at, cancelled_at, refunded_at, restock, return_pending, group_id, variant_index, variant, " +
		"idempotency_key, request_fingerprint) "
	// settled sales: paid, cancelled, refunded without restock, created at in the day.
	settled := func(act, in string, day int) string {
		at := stamp(fmt.Sprintf("CAST(seq AS SIGNED) * 1000 - %d", day*86_400_000_000))
		return insert + fmt.Sprintf("SELECT CONCAT(LPAD(seq, 26, '0'), %[1]s), %[1]s, CONCAT('s', seq %% 1000), 1, 100, "+
			"ELT(seq %% 3 + 1, 'paid', 'cancelled', 'refunded'), %[2]s, %[2]s, %[2]s, NULL, IF(seq %% 3 = 1, %[2]s, NULL), "+
			"IF(seq %% 3 = 2, %[2]s, NULL), IF(seq %% 3 = 2, FALSE, NULL), FALSE, NULL, NULL, NULL, NULL, NULL FROM %[3]s",
			act, at, in)
	}
	statements := []string{
		// plain: seq % 20 says the status: 0-9 paid, 10-14 created, 15-17 cancelled, 18 failed, 19 refunded.
		insert + fmt.Sprintf("SELECT %s, %d, CONCAT('b', seq %% 8000), 1, 100, "+
			"ELT(seq %% 20 + 1, 'paid','paid','paid','paid','paid','paid','paid','paid','paid','paid', "+
			"'created','created','created','created','created','cancelled','cancelled','cancelled','failed','refunded'), "+
			"%s, %s, %s, IF(seq %% 20 < 10 OR seq %% 20 = 19, %s, NULL), IF(seq %% 20 BETWEEN 15 AND 17, %s, NULL), "+
			"IF(seq %% 20 = 19, %s, NULL), IF(seq %% 20 = 19, seq %% 40 = 19, NULL), "+
			"seq %% 20 = 15 AND seq %% 100 < 20 OR seq %% 200 = 19, NULL, NULL, NULL, "+
			"IF(seq %% 3 = 0, CONCAT('k', seq), NULL), IF(seq %% 3 = 0, 'f', NULL) FROM seq_0_to_39999",
			id(m.plain), m.plain, created, expires, created, created, created, created),
		// group: group seq DIV 3; one in ten open with its third seat not taken, one in ten failed.
		insert + fmt.Sprintf("SELECT %s, %d, CONCAT('g', seq %% 5000), 1, 100, "+
			"CASE (seq DIV 3) %% 10 WHEN 9 THEN 'grouping' WHEN 8 THEN 'cancelled' ELSE IF(seq %% 2 = 0, 'paid', 'created') END, "+
			"%s, %s, %s, NULL, IF((seq DIV 3) %% 10 = 8, %s, NULL), NULL, NULL, FALSE, CONCAT('G', seq DIV 3), NULL, NULL, "+
			"NULL, NULL FROM seq_0_to_19999 WHERE NOT ((seq DIV 3) %% 10 = 9 AND seq %% 3 = 2)",
			id(m.group), m.group, created, expires, created, created),
		fmt.Sprintf("INSERT INTO sale_groups (id, activity_id, size, members, status, expires_at, created_at) "+
			"SELECT CONCAT('G', seq), %d, 3, IF(seq %% 10 = 9, 2, 3), ELT(IF(seq %% 10 >= 8, seq %% 10 - 6, 1), "+
			"'complete', 'failed', 'open'), %s, %s FROM seq_0_to_6666", m.group, expires, created),
		// variants: a third cancelled, return_pending.
		insert + fmt.Sprintf("SELECT %s, %d, CONCAT('v', seq %% 3000), 1, 100, IF(seq %% 3 = 0, 'cancelled', 'paid'), "+
			"%s, %s, %s, NULL, IF(seq %% 3 = 0, %s, NULL), NULL, NULL, seq %% 3 = 0, NULL, seq %% 3, "+
			"ELT(seq %% 3 + 1, 'red', 'green', 'blue'), NULL, NULL FROM seq_0_to_9999",
			id(m.variants), m.variants, created, expires, created, created),
		settled(fmt.Sprint(m.settled), "seq_0_to_9999", 0),
		settled(fmt.Sprintf("%d + seq DIV 10000", past[0]), "seq_0_to_119999", 1),
		// The totals the changes take back from.
		"INSERT INTO user_purchases (activity_id, buyer, units, participations) SELECT activity_id, buyer, SUM(quantity), " +
			"COUNT(*) FROM orders WHERE status IN ('grouping', 'created', 'paid') GROUP BY activity_id, buyer",
		"UPDATE activities a SET sold = (SELECT COALESCE(SUM(quantity), 0) FROM orders o " +
			"WHERE o.activity_id = a.id AND o.status IN ('grouping', 'created', 'paid'))",
		"UPDATE activity_variants v SET sold = (SELECT COALESCE(SUM(quantity), 0) FROM orders o " +
			"WHERE o.activity_id = v.activity_id AND o.variant_index = v.idx AND o.status IN ('grouping', 'created', 'paid'))",
		"ANALYZE TABLE orders, sale_groups, user_purchases",
	}
	for _, q := range statements {
		if err := db.WithContext(ctx).Exec(q).Error; err != nil {
			t.Fatalf("seed: %v\n%s", err, q)
		}
	}
	pick := func(q string, args ...any) string {
		var s string
		if err := db.Raw(q, args...).Scan(&s).Error; err != nil || s == "" {
			t.Fatalf("seed: %q found %q, %v", q, s, err)
		}
		return s
	}
	// Created orders whose pay window is open, and a paid one, near the end of the sale.
	m.created = pick("SELECT id FROM orders WHERE activity_id = ? AND status = 'created' AND expires_at > NOW(3) "+
		"ORDER BY id DESC LIMIT 1", m.plain)
	m.created2 = pick("SELECT id FROM orders WHERE activity_id = ? AND status = 'created' AND expires_at > NOW(3) "+
		"ORDER BY id DESC LIMIT 1, 1", m.plain)
	m.paid = pick("SELECT id FROM orders WHERE activity_id = ? AND status = 'paid' ORDER BY id DESC LIMIT 1", m.plain)
	m.buyer = "b7"
	if err := db.Raw("SELECT id FROM sale_groups WHERE activity_id = ? AND status = 'open' ORDER BY id LIMIT 2",
		m.group).Scan(&m.openGroups).Error; err != nil || len(m.openGroups) != 2 {
		t.Fatalf("seed: open groups %v, %v", m.openGroups, err)
	}
	return m
}

// allSQL is a GORM logger that keeps every statement run since its reset, and logs
// nothing.
type allSQL struct {
	logger.Interface
	mu    sync.Mutex
	stmts []string
}

func (l *allSQL) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	q, _ := fc()
	l.mu.Lock()
	l.stmts = append(l.stmts, q)
	l.mu.Unlock()
}

func (l *allSQL) reset() {
	l.mu.Lock()
	l.stmts = nil
	l.mu.Unlock()
}

// readsOrders matches a statement that reads or changes the table orders (SELECT,
// UPDATE, DELETE, and a join), not an INSERT of rows.
var readsOrders = regexp.MustCompile("(?is)^(UPDATE\\s+`?orders`?\\s|\\(?(SELECT|DELETE)\\b.*\\b(FROM|JOIN)\\s+`?orders`?(\\s|\\)|$))")

// onOrders returns the statements recorded that read or change orders.
func (l *allSQL) onOrders() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, q := range l.stmts {
		if readsOrders.MatchString(strings.TrimSpace(q)) {
			out = append(out, q)
		}
	}
	return out
}

// planRow is a row of EXPLAIN of a table that holds orders' rows.
type planRow struct {
	Table, Type, Key, Extra string
	Rows                    int64
}

// explain returns the rows of EXPLAIN q that read the table orders (by its name or the
// alias o).
func explain(t *testing.T, db *gorm.DB, q string) []planRow {
	t.Helper()
	var rows []struct {
		Table, Type, Key, Extra *string
		Rows                    *int64
	}
	if err := db.Raw("EXPLAIN " + q).Scan(&rows).Error; err != nil {
		t.Fatalf("EXPLAIN: %v\n%s", err, q)
	}
	var out []planRow
	for _, r := range rows {
		if r.Table == nil || *r.Table != "orders" && *r.Table != "o" {
			continue
		}
		p := planRow{Table: *r.Table, Type: deref(r.Type), Key: deref(r.Key), Extra: deref(r.Extra)}
		if r.Rows != nil {
			p.Rows = *r.Rows
		}
		out = append(out, p)
	}
	return out
}
