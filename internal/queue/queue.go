// Package queue carries orders from the API to the worker as asynq tasks on the
// "orders" queue. A TypePersistOrder task carries one order per line: the orders of the
// purchases an API process committed together (EnqueueBatch), or one order the worker's
// repair pass enqueued (EnqueueMissing, whose TaskID is the order id). The worker writes
// a task's orders to MySQL in one transaction per SECKILL_PERSIST_BATCH orders.
package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"seckill/internal/stock"
)

const (
	// Name is the asynq queue orders travel on.
	Name = "orders"
	// TypePersistOrder is the task type of orders to write to MySQL.
	TypePersistOrder = "order:persist"
	// MaxRetry bounds the retries of a task; with RetryDelay's 30 s ceiling it keeps
	// trying for about three days, long enough to outlast a MySQL outage.
	MaxRetry = 10000
)

// Order is one line of the payload of a TypePersistOrder task.
type Order struct {
	ID          string
	ActivityID  int64
	UserID      int64
	Quantity    int
	AmountCents int64
	CreatedAtMs int64
	ExpiresAtMs int64
	// Limit is the per-user limit the reservation was checked against.
	Limit int
	// Participations is the cap on the user's orders it was checked against (0: none).
	Participations int
	// Group, GroupSize and GroupExpiresAtMs are the order's group in a group-buy sale
	// ("" outside one). ExpiresAtMs - CreatedAtMs is then the pay window, which starts
	// when the group fills.
	Group            string
	GroupSize        int
	GroupExpiresAtMs int64
	// IdempotencyKey is the client's key that made the order and Fingerprint what it
	// remembers of the request (stock.Reservation.Fingerprint); "" without one. MySQL
	// keeps them, so a rebuild of the sale's Redis state brings the key back.
	IdempotencyKey string
	Fingerprint    string
}

// Queued is the order queued in Redis as q, at its sale's unit price and pay window:
// the one place an order's amount and expiry are worked out.
func Queued(q stock.QueuedOrder, sale stock.Sale) Order {
	o := Order{ID: q.OrderID, ActivityID: q.ActivityID, UserID: q.UserID, Quantity: q.Quantity,
		AmountCents: sale.PriceCents * int64(q.Quantity), CreatedAtMs: q.CreatedAt.UnixMilli(),
		ExpiresAtMs: q.CreatedAt.Add(sale.PayWindow).UnixMilli(), Limit: q.Limit,
		Participations: q.Participations, Group: q.Group, GroupSize: q.GroupSize}
	if q.Group != "" {
		o.GroupExpiresAtMs = q.GroupExpiresAt.UnixMilli()
	}
	return o
}

// QueuedOrder is o as Redis queued it: Queued undone (the amount and expiry aside).
func (o Order) QueuedOrder() stock.QueuedOrder {
	q := stock.QueuedOrder{OrderID: o.ID, ActivityID: o.ActivityID, UserID: o.UserID, Quantity: o.Quantity,
		CreatedAt: time.UnixMilli(o.CreatedAtMs).UTC(), Limit: o.Limit, Participations: o.Participations,
		Group: o.Group, GroupSize: o.GroupSize}
	if o.Group != "" {
		q.GroupExpiresAt = time.UnixMilli(o.GroupExpiresAtMs).UTC()
	}
	return q
}

// The payload is the order's fields separated by spaces, in the order of Order's
// fields: readable in queue tools, and cheap to write and read for every order. The
// next four (cap on participations, group, its size and end) are there only when the
// order has a cap, a group or an Idempotency-Key (group "-" when it has none), and the
// last two (the key and the fingerprint, neither of which holds a space) only with a
// key.
const payloadFields, payloadFieldsCapped, payloadFieldsKeyed = 8, 12, 14

func (o Order) payload() []byte {
	b := make([]byte, 0, 24+len(o.ID)+len(o.Group)+10*12)
	b = append(b, o.ID...)
	for _, n := range []int64{o.ActivityID, o.UserID, int64(o.Quantity), o.AmountCents,
		o.CreatedAtMs, o.ExpiresAtMs, int64(o.Limit)} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, n, 10)
	}
	if o.Participations == 0 && o.Group == "" && o.IdempotencyKey == "" {
		return b
	}
	group := o.Group
	if group == "" {
		group = "-"
	}
	b = strconv.AppendInt(append(b, ' '), int64(o.Participations), 10)
	b = append(append(append(b, ' '), group...), ' ')
	b = strconv.AppendInt(b, int64(o.GroupSize), 10)
	b = strconv.AppendInt(append(b, ' '), o.GroupExpiresAtMs, 10)
	if o.IdempotencyKey == "" {
		return b
	}
	return append(append(append(append(b, ' '), o.IdempotencyKey...), ' '), o.Fingerprint...)
}

// newPersistTask returns the task that writes o to MySQL. Its TaskID is the order id,
// so it is enqueued at most once while it waits.
func newPersistTask(o Order) *asynq.Task {
	return persistTask(o.payload(), asynq.TaskID(o.ID))
}

// NewBatchTask returns the task that writes orders (at least one) to MySQL.
func NewBatchTask(orders []Order) *asynq.Task {
	var b []byte
	for i, o := range orders {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, o.payload()...)
	}
	return persistTask(b)
}

func persistTask(payload []byte, opts ...asynq.Option) *asynq.Task {
	return asynq.NewTask(TypePersistOrder, payload, append(opts, asynq.Queue(Name),
		asynq.MaxRetry(MaxRetry), asynq.Timeout(2*time.Minute))...)
}

// ParseOrders decodes the payload of a TypePersistOrder task: one order per line.
func ParseOrders(payload []byte) ([]Order, error) {
	lines := bytes.Split(payload, []byte{'\n'})
	orders := make([]Order, len(lines))
	for i, line := range lines {
		var err error
		if orders[i], err = parseOrder(line); err != nil {
			return nil, err
		}
	}
	return orders, nil
}

// parseOrder decodes one order.
func parseOrder(payload []byte) (Order, error) {
	f := strings.Fields(string(payload))
	if len(f) != payloadFields && len(f) != payloadFieldsCapped && len(f) != payloadFieldsKeyed {
		return Order{}, fmt.Errorf("decode order task: %d fields in %q", len(f), payload)
	}
	var n [payloadFieldsCapped - 1]int64
	for i := range f[1:min(len(f), payloadFieldsCapped)] {
		if i == 8 { // the group id
			continue
		}
		var err error
		if n[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return Order{}, fmt.Errorf("decode order task: field %d of %q", i+2, payload)
		}
	}
	o := Order{ID: f[0], ActivityID: n[0], UserID: n[1], Quantity: int(n[2]), AmountCents: n[3],
		CreatedAtMs: n[4], ExpiresAtMs: n[5], Limit: int(n[6]), Participations: int(n[7])}
	if len(f) >= payloadFieldsCapped && f[9] != "-" {
		o.Group, o.GroupSize, o.GroupExpiresAtMs = f[9], int(n[9]), n[10]
	}
	if len(f) == payloadFieldsKeyed {
		o.IdempotencyKey, o.Fingerprint = f[12], f[13]
	}
	if o.ActivityID <= 0 || o.UserID <= 0 || o.Quantity <= 0 || o.Limit <= 0 {
		return Order{}, fmt.Errorf("decode order task: incomplete %q", payload)
	}
	return o, nil
}

// Enqueuer puts orders on the queue.
type Enqueuer struct{ client *asynq.Client }

// NewEnqueuer returns an Enqueuer that uses client.
func NewEnqueuer(client *asynq.Client) *Enqueuer { return &Enqueuer{client: client} }

// EnqueueBatch puts orders on the queue in one task, in one Redis round trip.
func (e *Enqueuer) EnqueueBatch(ctx context.Context, orders []Order) error {
	if len(orders) == 0 {
		return nil
	}
	if _, err := e.client.EnqueueContext(ctx, NewBatchTask(orders)); err != nil {
		return fmt.Errorf("enqueue %d orders: %w", len(orders), err)
	}
	return nil
}

// EnqueueMissing enqueues the order unless its task exists, and reports whether it
// had to.
func (e *Enqueuer) EnqueueMissing(ctx context.Context, o Order) (bool, error) {
	_, err := e.client.EnqueueContext(ctx, newPersistTask(o))
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
