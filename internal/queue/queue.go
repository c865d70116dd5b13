// Package queue carries orders from the API to the worker as asynq tasks: one task per
// order, whose TaskID is the order id, on the "orders" queue.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

const (
	// Name is the asynq queue orders travel on.
	Name = "orders"
	// TypePersistOrder is the task type of an order to write to MySQL.
	TypePersistOrder = "order:persist"
	// MaxRetry bounds the retries of a task; with RetryDelay's 30 s ceiling it keeps
	// trying for about three days, long enough to outlast a MySQL outage.
	MaxRetry = 10000
)

// Order is the payload of a TypePersistOrder task.
type Order struct {
	ID          string `json:"id"`
	ActivityID  int64  `json:"activity_id"`
	UserID      int64  `json:"user_id"`
	Quantity    int    `json:"quantity"`
	AmountCents int64  `json:"amount_cents"`
	CreatedAtMs int64  `json:"created_at_ms"`
	ExpiresAtMs int64  `json:"expires_at_ms"`
	// Limit is the per-user limit the reservation was checked against.
	Limit int `json:"limit"`
}

// NewPersistTask returns the task that writes o to MySQL.
func NewPersistTask(o Order) (*asynq.Task, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TypePersistOrder, b,
		asynq.TaskID(o.ID), asynq.Queue(Name), asynq.MaxRetry(MaxRetry), asynq.Timeout(time.Minute)), nil
}

// ParseOrder decodes the payload of a TypePersistOrder task.
func ParseOrder(payload []byte) (Order, error) {
	var o Order
	if err := json.Unmarshal(payload, &o); err != nil {
		return o, fmt.Errorf("decode order task: %w", err)
	}
	if o.ID == "" || o.ActivityID <= 0 || o.UserID <= 0 || o.Quantity <= 0 {
		return o, fmt.Errorf("decode order task: incomplete %+v", o)
	}
	return o, nil
}

// Enqueuer puts orders on the queue.
type Enqueuer struct{ client *asynq.Client }

// NewEnqueuer returns an Enqueuer that uses client.
func NewEnqueuer(client *asynq.Client) *Enqueuer { return &Enqueuer{client: client} }

// Enqueue puts the order on the queue. An order whose task already exists counts as
// enqueued, so enqueueing again is safe.
func (e *Enqueuer) Enqueue(ctx context.Context, o Order) error {
	_, err := e.EnqueueMissing(ctx, o)
	return err
}

// EnqueueMissing enqueues the order unless its task exists, and reports whether it
// had to.
func (e *Enqueuer) EnqueueMissing(ctx context.Context, o Order) (bool, error) {
	task, err := NewPersistTask(o)
	if err != nil {
		return false, err
	}
	_, err = e.client.EnqueueContext(ctx, task)
	switch {
	case errors.Is(err, asynq.ErrTaskIDConflict):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("enqueue order %s: %w", o.ID, err)
	}
	return true, nil
}

// RetryDelay is the worker's backoff between attempts of a task: 1 s doubling up to
// 30 s, with up to 25% jitter.
func RetryDelay(n int, _ error, _ *asynq.Task) time.Duration {
	d := time.Second << min(n, 5)
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	return d + time.Duration(float64(d)*0.25*rand.Float64())
}
