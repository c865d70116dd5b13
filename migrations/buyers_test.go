package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pressly/goose/v3"

	"seckill/internal/testutil"
	"seckill/migrations"
)

// Migration 00012 (buyers) keeps every row written at version 11: each order reads back
// as it was, with its buyer its user id, and each buyer's totals in user_purchases by
// buyer; the indexes that named user_id name buyer. After it, buyers that differ in
// letter case or a trailing space are two, and an order of a non-decimal buyer has no
// user id. Its Down refuses such an order, and on decimal buyers alone gives back the
// rows of version 11 exactly.
func TestBuyersMigrationKeepsRows(t *testing.T) {
	ctx := context.Background()
	conn, p := migratedTo(t, 11)
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	exec(`INSERT INTO activities (id, name, product_name, price_cents, stock_total, sold, per_user_limit, starts_at,
		ends_at, pay_window_seconds, created_at, updated_at, kind, group_size, group_window_seconds, per_user_participations)
		VALUES (7, 's', 'p', 100, 50, 6, 5, '2026-01-01', '2026-01-02', 60, '2026-01-01', '2026-01-01', 'group', 2, 60, 3)`)
	for i, o := range []struct {
		user   uint64
		status string
		extra  string // the columns an order of a group or an Idempotency-Key adds
	}{
		{42, "created", ""},
		{42, "paid", "paid_at = '2026-01-01 00:10:00.123'"},
		{1, "cancelled", "cancelled_at = '2026-01-01 00:11:00', return_pending = TRUE"},
		{9223372036854775807, "grouping", "group_id = 'g1', idempotency_key = 'k-1', request_fingerprint = 'q1:open'"},
		{5, "failed", "failure_reason = 'sold out', window_starts_at = '2026-01-01', window_ends_at = '2026-01-01 00:01:00'"},
	} {
		exec(fmt.Sprintf(`INSERT INTO orders SET id = 'o%d', activity_id = 7, user_id = ?, quantity = %d,
			amount_cents = %d, status = ?, created_at = '2026-01-01 00:00:0%d.5', expires_at = '2026-01-01 00:05:00',
			persisted_at = '2026-01-01 00:00:09'%s`, i, i+1, 100*(i+1), i, map[bool]string{true: ", " + o.extra}[o.extra != ""]),
			o.user, o.status)
	}
	exec(`INSERT INTO user_purchases (activity_id, user_id, units, participations) VALUES
		(7, 42, 3, 2), (7, 9223372036854775807, 4, 1), (7, 1, 0, 0), (8, 42, 1, 1)`)
	ordersAt11 := dump(t, conn, "SELECT * FROM orders ORDER BY id")
	purchasesAt11 := dump(t, conn, "SELECT * FROM user_purchases ORDER BY activity_id, user_id")

	if _, err := p.UpTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	orders := dump(t, conn, "SELECT * FROM orders ORDER BY id")
	for i, o := range orders {
		if o["buyer"] != ordersAt11[i]["user_id"] {
			t.Errorf("order %s: buyer %q, want its user id %q", o["id"], o["buyer"], ordersAt11[i]["user_id"])
		}
		delete(o, "buyer")
	}
	if diff := cmp.Diff(ordersAt11, orders); diff != "" {
		t.Errorf("orders after the migration (-before +after):\n%s", diff)
	}
	for _, u := range purchasesAt11 {
		u["buyer"] = u["user_id"]
		delete(u, "user_id")
	}
	if diff := cmp.Diff(purchasesAt11, dump(t, conn, "SELECT * FROM user_purchases ORDER BY activity_id, buyer")); diff != "" {
		t.Errorf("user_purchases after the migration (-before, by buyer +after):\n%s", diff)
	}
	for index, want := range map[string]string{
		"orders_by_user":  "buyer created_at",
		"orders_holdings": "activity_id buyer status return_pending quantity",
	} {
		if got := indexColumns(t, conn, "orders", index); got != want {
			t.Errorf("index %s on %q, want %q", index, got, want)
		}
	}
	if got := indexColumns(t, conn, "user_purchases", "PRIMARY"); got != "activity_id buyer" {
		t.Errorf("user_purchases' primary key on %q, want activity_id buyer", got)
	}

	// Bytes, not a collation, tell buyers apart.
	exec(`INSERT INTO user_purchases (activity_id, buyer, units, participations) VALUES
		(7, 'auth0|AbC', 1, 1), (7, 'auth0|abc', 1, 1), (7, 'a', 1, 1), (7, 'a ', 1, 1)`)
	exec(`INSERT INTO orders SET id = 'o9', activity_id = 7, buyer = 'auth0|AbC', quantity = 1, amount_cents = 100,
		status = 'created', created_at = '2026-01-01', expires_at = '2026-01-01', persisted_at = '2026-01-01'`)
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE buyer = 'auth0|abc' OR buyer = 'a'").Scan(&n); err != nil || n != 0 {
		t.Errorf("orders of auth0|abc or a: %d (%v), want none: auth0|AbC's is another buyer's", n, err)
	}
	if got := dump(t, conn, "SELECT user_id FROM orders WHERE id = 'o9'"); got[0]["user_id"] != "NULL" {
		t.Errorf("a non-decimal buyer's order has user_id %q, want NULL", got[0]["user_id"])
	}

	if _, err := p.Down(ctx); err == nil {
		t.Fatal("the Down of 00012 ran over an order of a non-decimal buyer")
	}
	exec("DELETE FROM orders WHERE id = 'o9'")
	exec("DELETE FROM user_purchases WHERE buyer NOT IN ('42', '1', '9223372036854775807')")
	if _, err := p.DownTo(ctx, 11); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ordersAt11, dump(t, conn, "SELECT * FROM orders ORDER BY id")); diff != "" {
		t.Errorf("orders after the Down (-at 11 +after):\n%s", diff)
	}
	if diff := cmp.Diff(purchasesAt11, renamed(dump(t, conn, "SELECT * FROM user_purchases ORDER BY activity_id, user_id"))); diff != "" {
		t.Errorf("user_purchases after the Down (-at 11 +after):\n%s", diff)
	}
}

// renamed is rows with user_id named buyer, as purchasesAt11 was turned into.
func renamed(rows []map[string]string) []map[string]string {
	for _, r := range rows {
		r["buyer"] = r["user_id"]
		delete(r, "user_id")
	}
	return rows
}

// dump reads every row of a query as text, NULL as "NULL".
func dump(t *testing.T, conn *sql.DB, query string) []map[string]string {
	t.Helper()
	rows, err := conn.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for rows.Next() {
		values := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = "NULL"
			if values[i].Valid {
				row[c] = values[i].String
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// indexColumns is an index's columns, in order.
func indexColumns(t *testing.T, conn *sql.DB, table, index string) string {
	t.Helper()
	var cols []string
	for _, r := range dump(t, conn, fmt.Sprintf("SHOW INDEX FROM %s WHERE Key_name = '%s'", table, index)) {
		cols = append(cols, r["Column_name"])
	}
	return strings.Join(cols, " ")
}

// migratedTo is a fresh database migrated up to version, and the provider that migrates
// it on.
func migratedTo(t *testing.T, version int64) (*sql.DB, *goose.Provider) {
	t.Helper()
	db := testutil.EmptyMySQLOn(t, testutil.Env("SECKILL_MYSQL_DSN", testutil.DefaultMySQLDSN))
	conn, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectMySQL, conn, migrations.Files)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), version); err != nil {
		t.Fatal(err)
	}
	return conn, p
}
