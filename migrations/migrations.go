// Package migrations holds the MySQL schema as ordered plain SQL files and applies them
// with goose. Concurrent starts are serialised by a MySQL named lock, so several API
// instances may start at once.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/pressly/goose/v3"
)

//go:embed *.sql
var files embed.FS

const lockName = "seckill_migrations"

// Up applies every migration not yet applied and returns the versions it applied.
//
// The whole of it runs under MySQL's GET_LOCK, held on a connection of its own: goose's
// session locker covers applying migrations but not its first look at the version
// table, where a second instance can find the table created (DDL commits at once in
// MySQL) but not yet its first row.
func Up(ctx context.Context, db *sql.DB) ([]int64, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", lockName).Scan(&got); err != nil {
		return nil, fmt.Errorf("migrations: take lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, fmt.Errorf("migrations: another instance held the lock for 60s")
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", lockName) //nolint:errcheck // the lock also ends with the connection

	p, err := goose.NewProvider(goose.DialectMySQL, db, files)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}
