package waitingroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// RoomLister lists the sales whose line may need advancing: those with a waiting room
// that have not ended (internal/store).
type RoomLister interface {
	WaitingRooms(ctx context.Context, now time.Time) ([]int64, error)
}

// Admitter advances every live line; the worker runs it as a periodic job, on one
// replica per period.
type Admitter struct {
	rooms  *Rooms
	lister RoomLister
	// Refresh is how long the list of rooms is reused before it is read again.
	Refresh time.Duration

	mu   sync.Mutex
	ids  []int64
	read time.Time
}

// NewAdmitter returns an Admitter of the lines lister lists, advanced by r.
func NewAdmitter(r *Rooms, lister RoomLister) *Admitter {
	return &Admitter{rooms: r, lister: lister, Refresh: 2 * time.Second}
}

// Run advances each live line once and returns how many buyers it admitted.
func (a *Admitter) Run(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if now := time.Now(); a.ids == nil || now.Sub(a.read) >= a.Refresh {
		ids, err := a.lister.WaitingRooms(ctx, now)
		if err != nil {
			return 0, fmt.Errorf("list waiting rooms: %w", err)
		}
		if ids == nil { // none: read, like a list, until the next refresh
			ids = []int64{}
		}
		a.ids, a.read = ids, now
	}
	var admitted int64
	var errs []error
	for _, id := range a.ids {
		step, err := a.rooms.Admit(ctx, id)
		switch {
		case errors.Is(err, ErrNoSale):
			// Redis lost the sale; its rebuild brings it back, with an empty line.
			slog.Warn("line: sale missing in Redis", "activity", id)
		case err != nil:
			errs = append(errs, fmt.Errorf("sale %d: %w", id, err))
		default:
			admitted += step.Admitted
		}
	}
	return admitted, errors.Join(errs...)
}
