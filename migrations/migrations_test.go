package migrations_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	"seckill/internal/testutil"
	"seckill/migrations"
)

// Several API instances starting at once migrate one database: the named lock lets
// one apply the migrations and the others find nothing left to do.
func TestConcurrentUp(t *testing.T) {
	db := testutil.MySQL(t) // migrated once already; start from an empty schema
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	if err := db.Gorm.Raw("SHOW TABLES").Scan(&tables).Error; err != nil || len(tables) < 2 {
		t.Fatalf("tables %v: %v", tables, err)
	}
	for _, table := range tables { // no foreign keys: any order will do
		if _, err := sqlDB.Exec("DROP TABLE `" + table + "`"); err != nil {
			t.Fatalf("drop %s: %v", table, err)
		}
	}
	var wg sync.WaitGroup
	applied := make([][]int64, 6)
	errs := make([]error, 6)
	for i := range applied {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			conn, err := sql.Open("mysql", db.DSN)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			applied[i], errs[i] = migrations.Up(context.Background(), conn)
		}(i)
	}
	wg.Wait()
	total := 0
	for i := range applied {
		if errs[i] != nil {
			t.Fatalf("instance %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	var versions int
	if err := sqlDB.QueryRow("SELECT COUNT(*) FROM goose_db_version WHERE version_id > 0").Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if total != versions || versions < 2 {
		t.Errorf("instances applied %d migrations in all, the database records %d; want each applied once", total, versions)
	}
}

// The columns MySQL compares with what a client sent compare its bytes, as Redis does:
// the buyer (a token's subject), the Idempotency-Key, a variant's name. Order and group
// ids keep the table's collation: the API looks them up only as issued (sale.ActivityOf
// refuses any other spelling), so no two of them differ in letter case alone.
func TestClientValuesCompareExactly(t *testing.T) {
	db := testutil.MySQL(t)
	for _, c := range []struct{ table, column string }{
		{"orders", "buyer"}, {"user_purchases", "buyer"}, {"orders", "idempotency_key"},
		{"orders", "variant"}, {"activity_variants", "name"},
	} {
		var collation sql.NullString
		err := db.Gorm.Raw("SELECT collation_name FROM information_schema.columns WHERE table_schema = DATABASE() "+
			"AND table_name = ? AND column_name = ?", c.table, c.column).Row().Scan(&collation)
		if err != nil {
			t.Fatalf("%s.%s: %v", c.table, c.column, err)
		}
		if collation.Valid && !strings.HasSuffix(collation.String, "_bin") { // NULL: a binary type
			t.Errorf("%s.%s compares by %s, which folds letter case: want bytes (VARBINARY or a _bin collation)",
				c.table, c.column, collation.String)
		}
	}
}
