package migrations_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Migration 00024 puts the two sweeps' indexes, orders_return_pending and
// orders_by_expiry, into one, orders_sweeps, on a table with rows; its Down gives the two
// back and leaves the rows as they were.
func TestSweepsIndexMigration(t *testing.T) {
	ctx := context.Background()
	conn, p := migratedTo(t, 23)
	if _, err := conn.ExecContext(ctx, `INSERT INTO orders (id, activity_id, buyer, quantity, amount_cents, status,
		created_at, expires_at, persisted_at, return_pending) VALUES
		('o1', 7, 'b', 1, 100, 'created', '2026-01-01', '2026-01-01 00:15', '2026-01-01', FALSE),
		('o2', 7, 'b', 1, 100, 'cancelled', '2026-01-01', '2026-01-01 00:15', '2026-01-01', TRUE)`); err != nil {
		t.Fatal(err)
	}
	rows := dump(t, conn, "SELECT * FROM orders ORDER BY id")
	steps := []struct {
		name    string
		migrate func() error
		want    map[string]string // index: its columns, "" for none
	}{
		{"up", func() error { _, err := p.UpTo(ctx, 24); return err }, map[string]string{
			"orders_sweeps": "return_pending status expires_at", "orders_return_pending": "", "orders_by_expiry": ""}},
		{"down", func() error { _, err := p.DownTo(ctx, 23); return err }, map[string]string{
			"orders_sweeps": "", "orders_return_pending": "return_pending", "orders_by_expiry": "status expires_at"}},
	}
	for _, s := range steps {
		if err := s.migrate(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for index, want := range s.want {
			if got := indexColumns(t, conn, "orders", index); got != want {
				t.Errorf("%s: index %s on %q, want %q", s.name, index, got, want)
			}
		}
		if diff := cmp.Diff(rows, dump(t, conn, "SELECT * FROM orders ORDER BY id")); diff != "" {
			t.Errorf("%s: orders (-before +after):\n%s", s.name, diff)
		}
	}
}
