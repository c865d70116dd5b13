package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/internal/buyer"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// BenchmarkPersistBatch writes orders as the worker does under a crowd: new buyers'
// orders of one unit in one sale, in PersistBatch's transactions of -batch orders (100,
// about what a crowd's commits give it) from two goroutines, on a private MariaDB
// (mariadbd of its own, so nothing else weighs on its figures) reached as the service
// reaches it (arguments interpolated by the driver, GOGC 400). It reports per order the CPU of
// mariadbd and of this process (the worker's side of the writes), and from MariaDB's
// status counters the rows read and written, statements and commits, and the changes to
// InnoDB's pages (Innodb_buffer_pool_write_requests: each index entry written changes a
// page, so it counts what the indexes cost beside the row, without the CPU's noise).
// BENCH_SCHEMA_SQL, statements separated by ';', runs on the benchmark's database before
// the writes: what a schema change would save (say, an index dropped) shows without one.
//
//	go test -run '^$' -bench PersistBatch -benchtime 40000x ./internal/store/
//	BENCH_SCHEMA_SQL='DROP INDEX orders_by_group ON orders' go test -run '^$' -bench PersistBatch ...
func BenchmarkPersistBatch(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // as the worker runs (GOGC, config.Vars)
	srv := testutil.StartMariaDB(b)
	db := srv.Database(b)
	gdb := serviceGorm(b, db.DSN)
	s := store.New(gdb, sale.EventViews{})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Activity{Name: "sale", ProductName: "phone", PriceCents: 100, StockTotal: 1 << 40,
		PerUserLimit: 1, StartsAt: now, EndsAt: now.Add(time.Hour), PayWindowSeconds: 900}
	if err := s.Activities.CreateActivity(ctx, &a, func(store.Activity) error { return nil }); err != nil {
		b.Fatal(err)
	}
	status, err := sql.Open("mysql", db.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer status.Close()
	for _, q := range strings.Split(os.Getenv("BENCH_SCHEMA_SQL"), ";") {
		if strings.TrimSpace(q) != "" {
			if _, err := status.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
	}
	const batch, writers = 100, 2
	var user int64
	write := func(n int) {
		batches := make(chan []store.NewOrder, writers)
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for os := range batches {
					if _, err := s.Batches.PersistBatch(ctx, os, outage.Outages{}); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for n > 0 {
			os := make([]store.NewOrder, min(n, batch))
			for i := range os {
				user++
				at := now.Add(time.Duration(user) * time.Microsecond)
				os[i] = store.NewOrder{Limit: 1, Gen: user, Order: store.Order{
					ID: fmt.Sprintf("%026d%d", user, a.ID), ActivityID: a.ID, Buyer: buyer.Of(user), Quantity: 1,
					AmountCents: 100, CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute)}}
			}
			batches <- os
			n -= len(os)
		}
		close(batches)
		wg.Wait()
	}
	write(batch) // the statements' first runs
	counters0 := globalStatus(b, status)
	server0, own0 := procCPU(b, srv.PID()), testutil.OwnCPU()
	b.ResetTimer()
	write(b.N)
	b.StopTimer()
	server1, own1 := procCPU(b, srv.PID()), testutil.OwnCPU()
	counters1 := globalStatus(b, status)
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(server1-server0), "mysqld-µs/order")
	b.ReportMetric(per(own1-own0), "worker-µs/order")
	for _, c := range []struct{ unit, counter string }{{"rows-read/order", "Rows_read"},
		{"written/order", "Handler_write"}, {"index-reads/order", "Handler_read_key"}, {"statements/order", "Queries"},
		{"page-writes/order", "Innodb_buffer_pool_write_requests"}} {
		b.ReportMetric(float64(counters1[c.counter]-counters0[c.counter])/float64(b.N), c.unit)
	}
}

// serviceGorm opens dsn as config.Config.MySQL does: arguments interpolated by the
// driver, no default transaction.
func serviceGorm(b *testing.B, dsn string) *gorm.DB {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.InterpolateParams = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sqlDB := sql.OpenDB(conn)
	b.Cleanup(func() { _ = sqlDB.Close() })
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB, SkipInitializeWithVersion: true}),
		&gorm.Config{SkipDefaultTransaction: true, Logger: logger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// globalStatus reads MariaDB's status counters.
func globalStatus(b *testing.B, db *sql.DB) map[string]int64 {
	rows, err := db.Query("SHOW GLOBAL STATUS")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			b.Fatal(err)
		}
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			out[name] = n
		}
	}
	return out
}

// procCPU is a process's user and system CPU time so far (/proc/<pid>/stat).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// the fields after the command's name, which ends with the last ')'
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ 100
}
