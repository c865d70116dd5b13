package migrations_test

import (
	"context"
	"database/sql"
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
