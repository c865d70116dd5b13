// Package task carries orders from the API to the worker as asynq tasks on the "orders"
// queue. A TypePersist task carries one queued order per line, in
// internal/stock's format (stock.QueuedOrder's AppendLine): the orders of the purchases
// an API process committed together (EnqueueBatch), or one order the worker's repair pass
// enqueued (EnqueueMissing, whose TaskID is the order id). The worker writes a task's
// orders to MySQL in one transaction per SECKILL_PERSIST_BATCH orders.
package task

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"seckill/internal/stock"
)

const (
	// Queue is the asynq queue the tasks travel on.
	Queue = "orders"
	// TypePersist is the task type of orders to write to MySQL. It names the payload's
	// form: a worker that does not know it (one of the previous release, during a rolling
	// deploy) fails the task, which asynq retries until a worker that does takes it. It
	// must not begin with an older type (TypePersistV1): asynq hands a task to the
	// handler of the longest type its own begins with.
	TypePersist = "queued-orders:persist"
	// MaxRetry bounds the retries of a task; with RetryDelay's 30 s ceiling it keeps
	// trying for about three days, long enough to outlast a MySQL outage.
	MaxRetry = 10000
)

// newPersistTask returns the task that writes q to MySQL. Its TaskID is the order id,
// so it is enqueued at most once while it waits.
func newPersistTask(q stock.QueuedOrder) *asynq.Task {
	return persistTask(q.AppendLine(nil), asynq.TaskID(q.OrderID))
}

// NewBatchTask returns the task that writes orders (at least one) to MySQL, carrying
// the traceparents of the orders that have one (by order id; nil for none) in its
// headers: the payload's format, shared with the Lua that reads queued orders, stays as
// it is.
func NewBatchTask(orders []stock.QueuedOrder, traceparents map[string]string) *asynq.Task {
	b := make([]byte, 0, 96*len(orders))
	for i, q := range orders {
		if i > 0 {
			b = append(b, '\n')
		}
		b = q.AppendLine(b)
	}
	if len(traceparents) == 0 {
		return persistTask(b)
	}
	headers := make(map[string]string, len(traceparents))
	for id, tp := range traceparents {
		headers[traceHeader+id] = tp
	}
	return asynq.NewTaskWithHeaders(TypePersist, b, headers, persistOptions()...)
}

// traceHeader begins the name of a task's header that holds the W3C traceparent of one
// of its orders: "traceparent:" and the order id.
const traceHeader = "traceparent:"

// Traceparents returns the traceparents a task carries, by order id (nil for none).
func Traceparents(t *asynq.Task) map[string]string {
	var out map[string]string
	for k, v := range t.Headers() {
		if id, ok := strings.CutPrefix(k, traceHeader); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = v
		}
	}
	return out
}

type traceparentsKey struct{}

// WithTraceparents returns ctx carrying the traceparents of orders about to be enqueued
// (by order id), for EnqueueBatch's task; ctx itself for none.
func WithTraceparents(ctx context.Context, traceparents map[string]string) context.Context {
	if len(traceparents) == 0 {
		return ctx
	}
	return context.WithValue(ctx, traceparentsKey{}, traceparents)
}

func persistTask(payload []byte, opts ...asynq.Option) *asynq.Task {
	return asynq.NewTask(TypePersist, payload, append(opts, persistOptions()...)...)
}

func persistOptions() []asynq.Option {
	return []asynq.Option{asynq.Queue(Queue), asynq.MaxRetry(MaxRetry), asynq.Timeout(2 * time.Minute)}
}

// ParseOrders decodes the payload of a task of type typ (TypePersist, or TypePersistV1
// as the previous release enqueued it): one order per line.
func ParseOrders(typ string, payload []byte) ([]stock.QueuedOrder, error) {
	parse := stock.ParseLine
	switch typ {
	case TypePersist:
	case TypePersistV1:
		parse = parseV1
	default:
		return nil, fmt.Errorf("decode order task: type %q", typ)
	}
	lines := bytes.Split(payload, []byte{'\n'})
	orders := make([]stock.QueuedOrder, len(lines))
	for i, line := range lines {
		var err error
		if orders[i], err = parse(line); err != nil {
			return nil, fmt.Errorf("decode order task: %w", err)
		}
	}
	return orders, nil
}

// Enqueuer puts orders on the queue.
type Enqueuer struct{ client *asynq.Client }

// NewEnqueuer returns an Enqueuer that uses client.
func NewEnqueuer(client *asynq.Client) *Enqueuer { return &Enqueuer{client: client} }

// EnqueueBatch puts orders on the queue in one task, in one Redis round trip, with the
// traceparents ctx carries (WithTraceparents).
func (e *Enqueuer) EnqueueBatch(ctx context.Context, orders []stock.QueuedOrder) error {
	if len(orders) == 0 {
		return nil
	}
	traceparents, _ := ctx.Value(traceparentsKey{}).(map[string]string)
	if _, err := e.client.EnqueueContext(ctx, NewBatchTask(orders, traceparents)); err != nil {
		return fmt.Errorf("enqueue %d orders: %w", len(orders), err)
	}
	return nil
}

// EnqueueMissing enqueues the order unless its task exists, and reports whether it
// had to.
func (e *Enqueuer) EnqueueMissing(ctx context.Context, q stock.QueuedOrder) (bool, error) {
	_, err := e.client.EnqueueContext(ctx, newPersistTask(q))
	switch {
	case errors.Is(err, asynq.ErrTaskIDConflict):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("enqueue order %s: %w", q.OrderID, err)
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
