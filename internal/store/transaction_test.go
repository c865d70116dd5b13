package store

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"seckill/internal/testutil"
)

// Two transactions that lock two rows in opposite orders deadlock for real in MariaDB;
// transaction runs the victim again, and both end committed, each row updated twice.
func TestTransactionRunsADeadlockVictimAgain(t *testing.T) {
	db := testutil.MySQL(t)
	s := New(db.Gorm, nil) // no order changes: no events to render
	ctx := context.Background()
	for _, q := range []string{"CREATE TABLE deadlock_probe (id INT PRIMARY KEY, n INT NOT NULL)",
		"INSERT INTO deadlock_probe VALUES (1, 0), (2, 0)"} {
		if err := db.Gorm.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	var attempts atomic.Int32
	var holding sync.WaitGroup // both hold their first row before either asks for its second
	holding.Add(2)
	errs := make(chan error, 2)
	for _, rows := range [][2]int{{1, 2}, {2, 1}} {
		go func() {
			first := true
			errs <- transaction(ctx, s.conn.db, func(tx *gorm.DB) error {
				attempts.Add(1)
				if err := tx.Exec("UPDATE deadlock_probe SET n = n + 1 WHERE id = ?", rows[0]).Error; err != nil {
					return err
				}
				if first {
					first = false
					holding.Done()
					holding.Wait()
				}
				return tx.Exec("UPDATE deadlock_probe SET n = n + 1 WHERE id = ?", rows[1]).Error
			})
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a transaction failed: %v", err)
		}
	}
	if n := attempts.Load(); n < 3 {
		t.Errorf("%d attempts: want 3 or more (a deadlock's victim run again)", n)
	}
	var ns []int
	if err := db.Gorm.Raw("SELECT n FROM deadlock_probe ORDER BY id").Scan(&ns).Error; err != nil {
		t.Fatal(err)
	}
	if len(ns) != 2 || ns[0] != 2 || ns[1] != 2 {
		t.Errorf("rows after both transactions: %v, want [2 2]", ns)
	}
}
