package testutil

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/internal/config"
	"seckill/migrations"
)

// DefaultMySQLDSN is the DSN tests use when SECKILL_MYSQL_DSN is unset; make test
// creates its user with the right to create seckill_* databases.
const DefaultMySQLDSN = "seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true"

// MySQLDB is a fresh database owned by one test, migrated unless EmptyMySQLOn made it.
type MySQLDB struct {
	// DSN reaches the database, in the form SECKILL_MYSQL_DSN takes.
	DSN string
	// Name is the database name.
	Name string
	// Gorm is an open handle, closed at cleanup.
	Gorm *gorm.DB
	// TLSCAFile is the authority of a server reached over TLS ("" for none): a stack
	// gives it to the service as SECKILL_MYSQL_TLS_CA_FILE, with the DSN less its tls=.
	TLSCAFile string
}

// Env is the service's settings to reach the database: its DSN, and over TLS the
// authority to verify the server with.
func (d *MySQLDB) Env() []string {
	if d.TLSCAFile == "" {
		return []string{"SECKILL_MYSQL_DSN=" + d.DSN}
	}
	cfg, _ := mysql.ParseDSN(d.DSN)
	cfg.TLSConfig, cfg.TLS = "", nil
	return []string{"SECKILL_MYSQL_DSN=" + cfg.FormatDSN(), "SECKILL_MYSQL_TLS_CA_FILE=" + d.TLSCAFile}
}

// Database creates a fresh, migrated database on the server (MySQLOn), reached over TLS
// when the server has a certificate.
func (s *MariaDBServer) Database(t testing.TB) *MySQLDB {
	t.Helper()
	d := MySQLOn(t, s.DSN)
	if s.TLS != nil {
		d.TLSCAFile = s.TLS.CAFile
	}
	return d
}

// MySQL creates a database named seckill_test_<random> on the server of
// SECKILL_MYSQL_DSN, applies the migrations, and drops it when the test ends. It fails
// the test when the server does not answer.
func MySQL(t testing.TB) *MySQLDB {
	t.Helper()
	return MySQLOn(t, Env("SECKILL_MYSQL_DSN", DefaultMySQLDSN))
}

// MySQLOn is MySQL on the server and with the credentials of dsn.
func MySQLOn(t testing.TB, dsn string) *MySQLDB {
	t.Helper()
	return newDatabase(t, dsn, true)
}

// EmptyMySQLOn is MySQLOn without the migrations: a database with no table yet, as a
// first install finds it.
func EmptyMySQLOn(t testing.TB, dsn string) *MySQLDB {
	t.Helper()
	return newDatabase(t, dsn, false)
}

func newDatabase(t testing.TB, dsn string, migrate bool) *MySQLDB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("parse SECKILL_MYSQL_DSN: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "seckill_test_" + hex.EncodeToString(b[:])

	admin := *cfg
	admin.DBName = ""
	server, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		t.Fatalf("open MySQL: %v", err)
	}
	defer server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := server.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("MySQL at %s is needed (make test starts it): create database: %v", cfg.Addr, err)
	}
	t.Cleanup(func() {
		c, err := sql.Open("mysql", admin.FormatDSN())
		if err == nil {
			_, _ = c.Exec("DROP DATABASE IF EXISTS `" + name + "`")
			_ = c.Close()
		}
	})

	cfg.DBName = name
	cfg.ParseTime = true
	d := &MySQLDB{DSN: cfg.FormatDSN(), Name: name}
	if migrate {
		sqlDB, err := sql.Open("mysql", d.DSN)
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		// A schema's migrations take seconds on a machine busy with the rest of make test:
		// they get the bound cmd/api gives them, not the create's.
		mctx, mcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer mcancel()
		if _, err := migrations.Up(mctx, sqlDB); err != nil {
			t.Fatalf("migrate %s: %v", name, err)
		}
		_ = sqlDB.Close()
	}
	d.Gorm = openGorm(t, d.DSN)
	return d
}

// GormWith is another handle on the database whose connections set params (session
// variables, such as sql_mode), closed at cleanup.
func (d *MySQLDB) GormWith(t testing.TB, params map[string]string) *gorm.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = params
	return openGorm(t, cfg.FormatDSN())
}

// openGorm opens dsn with the service's quiet logger and closes it at cleanup.
func openGorm(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(gormmysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("gorm open: %v", err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			_ = s.Close()
		}
	})
	return db
}

// DoubleRows doubles the rows of table n times, to 2^n times as many, each copy with
// its own id: a history to measure against, made in seconds.
func (d *MySQLDB) DoubleRows(t testing.TB, table string, n int) {
	t.Helper()
	var cols []string
	if err := d.Gorm.Raw("SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() "+
		"AND table_name = ? AND column_name <> 'id' ORDER BY ordinal_position", table).Scan(&cols).Error; err != nil {
		t.Fatal(err)
	}
	c := strings.Join(cols, ", ")
	for range n {
		if err := d.Gorm.Exec("INSERT INTO " + table + " (" + c + ") SELECT " + c + " FROM " + table).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// ServiceGorm is a handle on the database with the service's own MySQL client
// (config.MySQL: its pool, its bounds, its driver settings), closed at cleanup.
func (d *MySQLDB) ServiceGorm(t testing.TB) *gorm.DB {
	t.Helper()
	db, err := config.Config{MySQLDSN: d.DSN}.MySQL()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			_ = s.Close()
		}
	})
	return db
}
