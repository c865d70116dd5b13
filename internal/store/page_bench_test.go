package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/internal/buyer"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// BenchmarkSaleOrdersPage measures a page of 1,000 orders of a sale of 1,000,000 in
// MySQL (store.Orders.SaleOrders, the back office's GET /api/v1/orders?activity_id=), beside a
// second sale of 1,000,000 whose orders were taken at the same instants (their ids
// interleave): from the start, from the middle, of one status (paid, half the orders),
// and a buyer's page (the buyer of one order in 20). It fails unless EXPLAIN shows each
// page read through its index (a range of orders_by_sale; of orders_by_activity for a
// status; of orders_holdings for a buyer), and logs the plans. MySQL's client is the
// API's (config.MySQL).
//
//	go test -run - -bench SaleOrdersPage -benchtime 200x ./internal/store
func BenchmarkSaleOrdersPage(b *testing.B) {
	ctx := context.Background()
	testDB := testutil.MySQL(b)
	db := testDB.ServiceGorm(b)
	st := store.New(db, sale.EventViews{})
	const n = 1_000_000
	start := time.Now()
	ids, sales := seedTwoSales(b, testDB.Gorm, st, n, 100_000)
	b.Logf("seeded 2 x %d orders in %v", n, time.Since(start).Round(time.Millisecond))
	act := sales[0]
	horizon := ulid.MustNew(ulid.Timestamp(time.Now().Add(time.Hour)), nil).String()

	for _, tc := range []struct {
		name, status, index string
		buyer               buyer.ID
		after               func(i int) string
	}{
		{"from the start", "", "orders_by_sale", "", func(int) string { return "" }},
		{"from anywhere", "", "orders_by_sale", "", func(i int) string { return ids[(i*7919)%(n-1000)] }},
		{"paid, from anywhere", store.StatusPaid, "orders_by_activity", "", func(i int) string { return ids[(i*7919)%(n-2000)] }},
		// 50,000 orders of the buyer: 1,000 of them are in the last 20,000 ids.
		{"a buyer's, from anywhere", "", "orders_holdings", heavyBuyer, func(i int) string { return ids[(i*7919)%(n-20000)] }},
	} {
		var plan []struct {
			Type, Key, Ref, Extra *string
			Rows                  *int64
		}
		// The statement SaleOrders runs, as the driver sends it, explained.
		rec := &lastSQL{Interface: logger.Discard}
		r := store.OrderRange{ActivityID: act, Status: tc.status, Buyer: tc.buyer, After: tc.after(1), Before: horizon, Limit: 1000}
		if _, err := store.New(db.Session(&gorm.Session{Logger: rec}), sale.EventViews{}).Orders.SaleOrders(ctx, r); err != nil {
			b.Fatal(err)
		}
		if err := db.WithContext(ctx).Raw("EXPLAIN " + rec.sql).Scan(&plan).Error; err != nil {
			b.Fatal(err)
		}
		if len(plan) != 1 || plan[0].Key == nil || *plan[0].Key != tc.index || plan[0].Type == nil || *plan[0].Type != "range" {
			b.Fatalf("%s: the page is not a range of %s: %+v", tc.name, tc.index, plan)
		}
		b.Logf("%s: EXPLAIN type %s, key %s, rows %d, %s", tc.name, deref(plan[0].Type), *plan[0].Key, *plan[0].Rows,
			deref(plan[0].Extra))
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				os, err := st.Orders.SaleOrders(ctx, store.OrderRange{ActivityID: act, Status: tc.status, Buyer: tc.buyer,
					After: tc.after(i), Before: horizon, Limit: 1000})
				if err != nil || len(os) != 1000 {
					b.Fatalf("page: %d orders, %v; want 1000", len(os), err)
				}
			}
		})
	}
}

// lastSQL is a GORM logger that keeps the last statement run, and logs nothing.
type lastSQL struct {
	logger.Interface
	sql string
}

func (l *lastSQL) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	l.sql, _ = fc()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// seedTwoSales writes two sales and n orders of each in multi-row INSERTs, the two
// sales' orders taken at the same instants, so their ids interleave; half of each
// sale's orders paid, the rest created. Every 20th order is heavyBuyer's, the others
// are spread over buyers "1" to "buyers". It returns the first sale's order ids in
// order, and the two sales' ids.
func seedTwoSales(b testing.TB, db *gorm.DB, st *store.Store, n, buyers int) ([]string, [2]int64) {
	b.Helper()
	ctx := context.Background()
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	var acts [2]int64
	for i := range acts {
		a := store.Activity{Name: "bench", ProductName: "p", PriceCents: 100, StockTotal: int64(n),
			PerUserLimit: 1, StartsAt: t0, EndsAt: t0.Add(2 * time.Hour), PayWindowSeconds: 900}
		if err := st.Activities.CreateActivity(ctx, &a, func(store.Activity) error { return nil }); err != nil {
			b.Fatal(err)
		}
		acts[i] = a.ID
	}
	entropy := ulid.Monotonic(rand.NewChaCha8([32]byte{1}), 0)
	stamp := "'" + t0.Format("2006-01-02 15:04:05.000") + "'"
	ids := make([]string, 0, n)
	const batch = 2500 // orders of each sale per INSERT
	var sql strings.Builder
	for first := 0; first < n; first += batch {
		sql.Reset()
		sql.WriteString("INSERT INTO orders (id, activity_id, user_id, buyer, quantity, amount_cents, status, " +
			"created_at, expires_at, paid_at, paid_by, persisted_at) VALUES ")
		for i := first; i < min(first+batch, n); i++ {
			at := ulid.Timestamp(t0.Add(time.Duration(i) * time.Millisecond / 4)) // 4,000 purchases a second
			for s, act := range acts {
				id := ulid.MustNew(at, entropy).String() + fmt.Sprint(act)
				if s == 0 {
					ids = append(ids, id)
				}
				status, paidAt, paidBy := store.StatusCreated, "NULL", "NULL"
				if i%2 == 0 {
					status, paidAt, paidBy = store.StatusPaid, stamp, "'service'"
				}
				if i > first || s > 0 {
					sql.WriteByte(',')
				}
				user, who := fmt.Sprint(i%buyers+1), fmt.Sprint(i%buyers+1)
				if i%20 == 0 {
					user, who = "NULL", heavyBuyer
				}
				fmt.Fprintf(&sql, "('%s',%d,%s,'%s',1,100,'%s',%s,%s,%s,%s,%s)", id, act, user, who, status, stamp, stamp,
					paidAt, paidBy, stamp)
			}
		}
		if err := db.WithContext(ctx).Exec(sql.String()).Error; err != nil {
			b.Fatalf("insert orders %d..: %v", first, err)
		}
	}
	// Fresh index statistics, so the query is planned as on a table that grew slowly.
	if err := db.WithContext(ctx).Exec("ANALYZE TABLE orders").Error; err != nil {
		b.Fatal(err)
	}
	return ids, acts
}

// heavyBuyer is the buyer of every 20th order of seedTwoSales.
const heavyBuyer = "heavy"

// A buyer's page of a sale's orders reads the rows it returns and no others: a range of
// the index orders_holdings (activity_id, buyer, id), whatever the buyer's share of the
// sale (left to itself, MariaDB read a buyer of 5% of the orders through the primary
// key, 40 rows of both sales for each one returned) and however many orders the buyer
// has in other sales. MariaDB's ANALYZE counts the rows read.
func TestBuyerPageReadsItsOwnRows(t *testing.T) {
	ctx := context.Background()
	testDB := testutil.MySQL(t)
	st := store.New(testDB.Gorm, sale.EventViews{})
	const n = 50_000
	_, sales := seedTwoSales(t, testDB.Gorm, st, n, 500)
	// Buyer "wide" has one order in the first sale and many in a third.
	other := store.Activity{Name: "other", ProductName: "p", PriceCents: 100, StockTotal: n, PerUserLimit: 1,
		StartsAt: time.Now(), EndsAt: time.Now().Add(time.Hour), PayWindowSeconds: 900}
	if err := st.Activities.CreateActivity(ctx, &other, func(store.Activity) error { return nil }); err != nil {
		t.Fatal(err)
	}
	err := testDB.Gorm.Exec("INSERT INTO orders (id, activity_id, buyer, quantity, amount_cents, status, created_at, "+
		"expires_at, persisted_at) SELECT CONCAT(LPAD(seq, 26, '0'), ?), ?, 'wide', 1, 100, 'paid', NOW(3), NOW(3), NOW(3) "+
		"FROM seq_1_to_20000 UNION ALL SELECT CONCAT('ZZ', ?), ?, 'wide', 1, 100, 'paid', NOW(3), NOW(3), NOW(3)",
		other.ID, other.ID, sales[0], sales[0]).Error
	if err != nil {
		t.Fatal(err)
	}
	if err := testDB.Gorm.Exec("ANALYZE TABLE orders").Error; err != nil {
		t.Fatal(err)
	}
	firstOf := func(who string, skip int) string {
		var id string
		if err := testDB.Gorm.Raw("SELECT id FROM orders WHERE activity_id = ? AND buyer = ? ORDER BY id LIMIT ?, 1",
			sales[0], who, skip).Scan(&id).Error; err != nil {
			t.Fatal(err)
		}
		return id
	}
	horizon := ulid.MustNew(ulid.Timestamp(time.Now().Add(time.Hour)), nil).String()
	for _, tc := range []struct {
		name, buyer, after, status string
	}{
		{"the heavy buyer, from the start", heavyBuyer, "", ""},
		{"the heavy buyer, from the middle", heavyBuyer, firstOf(heavyBuyer, 1200), ""},
		{"the heavy buyer's paid orders", heavyBuyer, firstOf(heavyBuyer, 600), store.StatusPaid},
		{"a buyer of 95 orders, from the middle", "7", firstOf("7", 40), ""},
		{"a buyer of one order here and many elsewhere", "wide", "", ""},
		{"a buyer with no order", "nobody", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &lastSQL{Interface: logger.Discard}
			page, err := store.New(testDB.Gorm.Session(&gorm.Session{Logger: rec}), sale.EventViews{}).Orders.SaleOrders(ctx,
				store.OrderRange{ActivityID: sales[0], Buyer: buyer.ID(tc.buyer), Status: tc.status, After: tc.after,
					Before: horizon, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var report string
			if err := testDB.Gorm.Raw("ANALYZE FORMAT=JSON " + rec.sql).Row().Scan(&report); err != nil {
				t.Fatal(err)
			}
			read, key := rowsRead(t, report)
			if key != "orders_holdings" || read > float64(len(page)) {
				t.Errorf("the page of %d orders read %.0f rows through %q, want at most %d through orders_holdings:\n%s",
					len(page), read, key, len(page), report)
			}
		})
	}
}

// rowsRead is the rows MariaDB's ANALYZE FORMAT=JSON report says it read of the table
// orders, and through which index.
func rowsRead(t *testing.T, report string) (float64, string) {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(report), &doc); err != nil {
		t.Fatalf("ANALYZE report: %v", err)
	}
	var walk func(v any) (float64, string, bool)
	walk = func(v any) (float64, string, bool) {
		switch v := v.(type) {
		case map[string]any:
			if v["table_name"] == "orders" {
				rows, _ := v["r_rows"].(float64)
				key, _ := v["key"].(string)
				return rows, key, true
			}
			for _, c := range v {
				if rows, key, ok := walk(c); ok {
					return rows, key, true
				}
			}
		case []any:
			for _, c := range v {
				if rows, key, ok := walk(c); ok {
					return rows, key, true
				}
			}
		}
		return 0, "", false
	}
	rows, key, ok := walk(doc)
	if !ok {
		t.Fatalf("no table orders in the ANALYZE report %s", report)
	}
	return rows, key
}
