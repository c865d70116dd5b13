package waitingroom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"seckill/internal/apitime"
)

// States of a line, as its public status shows them.
const (
	StateBefore    = "before"    // the sale has not started: joins wait for it
	StateAdmitting = "admitting" // the line admits, in place order
	StateSoldOut   = "sold_out"  // no unit left: nobody more is admitted
	StateEnded     = "ended"     // the sale has ended
)

// Status is a line's public status: the same for every buyer, so a shared cache may
// answer it. A waiting buyer's ticket is admitted once AdmittedThrough >= its Place.
type Status struct {
	ActivityID int64  `json:"activity_id"`
	State      string `json:"state"`
	// AdmittedThrough is the highest place admitted so far (0 before any).
	AdmittedThrough int64 `json:"admitted_through"`
	Joined          int64 `json:"joined"`
	Admitted        int64 `json:"admitted"`
	AdmitPerSecond  int64 `json:"admit_per_second"`
	UnitsLeft       int64 `json:"units_left"`
	// AsOf is when the figures were read, by the clock the line judges by.
	AsOf apitime.Time `json:"as_of"`
}

// StatusAge is the most a line's status is behind Redis: each API reads a sale's at
// most once per StatusAge, however many ask.
const StatusAge = time.Second

// Status returns the sale's line status from this process's snapshot of it, read from
// Redis first when it is StatusAge old: a crowd polling it costs Redis one read a
// second. Errors (kept as long): ErrNoSale, ErrNoWaitingRoom, a *snapshot.Failed.
func (r *Rooms) Status(ctx context.Context, activityID int64) (Status, error) {
	a, err := r.statuses.Get(ctx, activityID, func(ctx context.Context) (statusAnswer, error) {
		s, err := r.ReadStatus(ctx, activityID)
		if errors.Is(err, ErrNoSale) || errors.Is(err, ErrNoWaitingRoom) {
			return statusAnswer{refusal: err}, nil // an answer, not a failure to log
		}
		return statusAnswer{status: s}, err
	})
	if err != nil {
		return Status{}, err
	}
	return a.status, a.refusal
}

// statusAnswer is a status, or the line's refusal to give one, as a snapshot keeps it.
type statusAnswer struct {
	status  Status
	refusal error
}

// ReadStatus reads the sale's line status from Redis, in one script call. Errors:
// ErrNoSale, ErrNoWaitingRoom.
func (r *Rooms) ReadStatus(ctx context.Context, activityID int64) (Status, error) {
	res, err := statusScript.run(ctx, r.rdb, keys(activityID), map[string]any{"clock": r.clock()})
	if err != nil {
		return Status{}, fmt.Errorf("read line status: %w", err)
	}
	_, v, err := decode(res, replyStatus)
	if err != nil {
		return Status{}, err
	}
	state, through, joined, admitted, rate, units, now := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	if state < 0 || state >= int64(len(lineStates)) {
		return Status{}, fmt.Errorf("%w: line state %d", errUnexpectedReply, state)
	}
	return Status{ActivityID: activityID, State: lineStates[state].state, AdmittedThrough: through, Joined: joined,
		Admitted: admitted, AdmitPerSecond: rate, UnitsLeft: units, AsOf: apitime.Of(time.UnixMilli(now))}, nil
}
