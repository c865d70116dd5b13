package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"seckill/internal/testutil"
)

// insertOrders writes every column of an order but those a new order cannot have yet
// (it refuses such a row): a field added to Order and not to the statement fails here.
func TestInsertOrdersWritesEveryColumn(t *testing.T) {
	s, err := schema.Parse(&Order{}, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSuffix(strings.TrimPrefix(insertOrdersHead, "INSERT INTO orders ("), ") VALUES ")
	written := map[string]bool{}
	for _, c := range strings.Split(head, ", ") {
		written[c] = true
	}
	notNew := map[string]bool{"paid_at": true, "paid_by": true, "cancelled_at": true, "refunded_at": true,
		"restock": true, "return_pending": true}
	for _, f := range s.Fields {
		if f.DBName != "" && !written[f.DBName] && !notNew[f.DBName] {
			t.Errorf("insertOrders does not write orders.%s (Order.%s)", f.DBName, f.Name)
		}
	}
	if len(written) != orderColumns {
		t.Errorf("insertOrdersHead names %d columns, orderColumns says %d", len(written), orderColumns)
	}
}

// execBuilt runs a statement as tx.Exec does: the same rows and values (placeholders in
// values are values), the same count of affected rows, the same errors, and GORM's
// callbacks, the schema gate among them.
func TestExecBuiltAsExec(t *testing.T) {
	db := testutil.MySQL(t)
	ctx := context.Background()
	if err := db.Gorm.Exec("CREATE TABLE built_probe (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL, n INT NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	const upsert = "INSERT INTO built_probe (id, v, n) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE n = n + VALUES(n)"
	ways := []struct {
		name string
		exec func(tx *gorm.DB, q string, args []any) *gorm.DB
	}{
		{"tx.Exec", func(tx *gorm.DB, q string, args []any) *gorm.DB { return tx.Exec(q, args...) }},
		{"execBuilt", execBuilt},
	}
	for i, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			id := int64(10 * i)
			run := func(q string, args ...any) (int64, error) {
				var affected int64
				err := db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					res := w.exec(tx, q, args)
					affected = res.RowsAffected
					return res.Error
				})
				return affected, err
			}
			odd := "a@b ? 'c' \\ \"d\""
			if n, err := run(upsert, id, odd, 1, id+1, "?", 1); err != nil || n != 2 {
				t.Fatalf("insert: %d rows affected, %v; want 2", n, err)
			}
			if n, err := run(upsert, id, "x", 5, id+2, "@", 1); err != nil || n != 3 { // one updated (2), one new (1)
				t.Fatalf("upsert: %d rows affected, %v; want 3", n, err)
			}
			var v string
			var n int
			if err := db.Gorm.Raw("SELECT v, n FROM built_probe WHERE id = ?", id).Row().Scan(&v, &n); err != nil || v != odd || n != 6 {
				t.Errorf("row %d = %q, %d (%v); want %q, 6", id, v, n, err, odd)
			}
			var me *mysql.MySQLError
			if _, err := run("INSERT INTO built_probe (id, v, n) VALUES (?, ?, ?)", id, "again", 1); !errors.As(err, &me) || me.Number != 1062 {
				t.Errorf("a duplicate: %v, want MySQL's error 1062", err)
			}
		})
	}
	gate, err := NewGate(db.Gorm)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ways {
		err := db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return w.exec(tx, upsert, []any{100, "gated", 1, 101, "gated", 1}).Error
		})
		if !errors.Is(err, ErrSchemaPending) {
			t.Errorf("%s with the gate closed: %v, want ErrSchemaPending", w.name, err)
		}
	}
	gate.Open()
}

// uniqueByID keeps the first order of each id, in the batch's order, and leaves a
// batch without a repeat as it is.
func TestUniqueByID(t *testing.T) {
	of := func(ids ...string) []NewOrder {
		out := make([]NewOrder, len(ids))
		for i, id := range ids {
			out[i] = NewOrder{Order: Order{ID: id, Quantity: i + 1}}
		}
		return out
	}
	quantities := func(orders []NewOrder) string {
		var b strings.Builder
		for _, o := range orders {
			fmt.Fprintf(&b, "%s%d ", o.ID, o.Quantity)
		}
		return b.String()
	}
	tests := []struct {
		ids  []string
		want string
	}{
		{nil, ""},
		{[]string{"a", "b", "c"}, "a1 b2 c3 "},
		{[]string{"a", "b", "a", "c", "b"}, "a1 b2 c4 "},
		{[]string{"a", "a", "a"}, "a1 "},
	}
	for _, tt := range tests {
		orders := of(tt.ids...)
		got := uniqueByID(orders)
		if quantities(got) != tt.want {
			t.Errorf("uniqueByID(%v) = %q, want %q", tt.ids, quantities(got), tt.want)
		}
		if len(got) == len(orders) && len(got) > 0 && &got[0] != &orders[0] {
			t.Errorf("uniqueByID(%v) copied a batch without a repeat", tt.ids)
		}
		if len(got) < len(orders) && quantities(orders) != quantities(of(tt.ids...)) {
			t.Errorf("uniqueByID(%v) changed the caller's batch", tt.ids)
		}
	}
}
