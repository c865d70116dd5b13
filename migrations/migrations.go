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
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// Up applies every migration not yet applied and returns the versions it applied.
func Up(ctx context.Context, db *sql.DB) ([]int64, error) {
	p, err := goose.NewProvider(goose.DialectMySQL, db, files,
		goose.WithSessionLocker(namedLock{}))
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

// namedLock serialises migrations with MySQL's GET_LOCK, held by the session goose
// migrates on; a crashed holder's lock goes with its connection.
type namedLock struct{}

var _ lock.SessionLocker = namedLock{}

const lockName = "seckill_migrations"

func (namedLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", lockName).Scan(&got); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("take migration lock: another migration held it for 60s")
	}
	return nil
}

func (namedLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", lockName)
	return err
}
