package store

import (
	"errors"
	"fmt"
	"sync/atomic"

	"gorm.io/gorm"
)

// ErrSchemaPending means this process has not yet seen the database's schema brought to
// its version: it started while MySQL did not answer, and its migrations have not run
// since.
var ErrSchemaPending = errors.New("the database is not ready yet: its migrations have not run")

// Gate holds every statement run through a *gorm.DB, this package's and
// internal/outbox's, until it is opened: each fails at once with ErrSchemaPending. A
// process that starts while MySQL does not answer must not read or write a column that
// its migrations add before they have run.
type Gate struct{ open atomic.Bool }

// NewGate returns a gate, closed, on every statement of db.
func NewGate(db *gorm.DB) (*Gate, error) {
	g := &Gate{}
	hold := func(tx *gorm.DB) {
		if !g.open.Load() {
			_ = tx.AddError(ErrSchemaPending)
		}
	}
	const name = "seckill:schema_gate"
	cb := db.Callback()
	if err := errors.Join(
		cb.Create().Before("*").Register(name, hold),
		cb.Query().Before("*").Register(name, hold),
		cb.Update().Before("*").Register(name, hold),
		cb.Delete().Before("*").Register(name, hold),
		cb.Row().Before("*").Register(name, hold),
		cb.Raw().Before("*").Register(name, hold),
	); err != nil {
		return nil, fmt.Errorf("schema gate: %w", err)
	}
	return g, nil
}

// Open lets every statement through from now on.
func (g *Gate) Open() { g.open.Store(true) }
