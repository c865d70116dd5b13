// Package outbox sends the changes of orders and groups to a shop's endpoints as
// signed webhooks, at least once and in order per order. It owns three tables:
//
//   - outbox_events: one row per change, written by internal/store in the same MySQL
//     transaction as the change itself (Record), with the exact body to POST;
//   - webhooks: the endpoints an admin subscribed (Webhooks);
//   - webhook_deliveries: one row per event and endpoint, with its attempts and next
//     try, made by the worker's delivery loop when it fans an event out (Deliverer).
//
// Writing a change costs one row whatever the number of endpoints; the fan-out, the
// retries and their bookkeeping happen later, in the worker. docs/internals/outbox.md has the
// design and what it costs.
package outbox

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"gorm.io/gorm"

	"seckill/internal/apitime"
)

// Event types.
const (
	OrderCreated   = "order.created"
	OrderPaid      = "order.paid"
	OrderCancelled = "order.cancelled"
	OrderFailed    = "order.failed"
	OrderRefunded  = "order.refunded"
	GroupCompleted = "group.completed"
	GroupFailed    = "group.failed"
)

// Types are the event types, in the order an endpoint's list shows them.
var Types = []string{OrderCreated, OrderPaid, OrderCancelled, OrderFailed, OrderRefunded, GroupCompleted, GroupFailed}

// Event is a change to record.
type Event struct {
	// Type is one of Types.
	Type string
	// Subject is the order or group that changed: an endpoint gets the events of one
	// subject in the order they happened, each once the one before it is delivered (or
	// given up).
	Subject string
	// At is when the change happened.
	At time.Time
	// Data is the event's data object, marshalled to JSON: {"order": ...} or
	// {"group": ...}.
	Data any
	// Trace is the W3C traceparent of the change's span, "" for none: each delivery of
	// the event is a span of that trace.
	Trace string
}

// body is what an endpoint receives.
type body struct {
	ID        string       `json:"id"`
	Type      string       `json:"type"`
	CreatedAt apitime.Time `json:"created_at"`
	Data      any          `json:"data"`
}

// Record writes events to the outbox with tx, the transaction of the changes they tell
// of: Write of those Wanted.
func Record(tx *gorm.DB, events ...Event) error {
	wanted, err := Wanted(tx, events)
	if err != nil {
		return err
	}
	return Write(tx, wanted...)
}

// Wanted returns the events some enabled endpoint subscribes to, the only ones to
// write: with no endpoint, a change costs one small read. Its caller may complete them
// (with what only an event needs) before it writes them.
func Wanted(tx *gorm.DB, events []Event) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	wanted, err := subscribed(tx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(events, func(e Event) bool { return !wanted[e.Type] }), nil
}

// Write writes events (those Wanted) to the outbox with tx, the transaction of the
// changes they tell of, in one INSERT. Each gets an id (a ULID of its time, prefixed
// evt_) that every delivery of it carries as webhook-id, and its body, written once, so
// every retry sends the same bytes.
func Write(tx *gorm.DB, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	values := make([]string, len(events))
	args := make([]any, 0, 6*len(events))
	for i, e := range events {
		at := apitime.Of(e.At)
		id := "evt_" + ulid.MustNew(ulid.Timestamp(at.Time), rand.Reader).String()
		b, err := json.Marshal(body{ID: id, Type: e.Type, CreatedAt: at, Data: e.Data})
		if err != nil {
			return fmt.Errorf("outbox: marshal %s of %s: %w", e.Type, e.Subject, err)
		}
		values[i] = "(?, ?, ?, ?, ?, ?)"
		var trace *string
		if e.Trace != "" {
			trace = &e.Trace
		}
		args = append(args, id, e.Type, e.Subject, string(b), at.Time, trace)
	}
	if err := tx.Exec("INSERT INTO outbox_events (id, type, subject, body, created_at, traceparent) VALUES "+
		strings.Join(values, ", "), args...).Error; err != nil {
		return fmt.Errorf("outbox: record %d events: %w", len(events), err)
	}
	return nil
}

// subscribed returns the event types some enabled endpoint subscribes to. It reads with
// a shared lock, so an endpoint subscribed (or unsubscribed) while tx runs waits for tx:
// a change committed after an endpoint's creation always has its event written.
func subscribed(tx *gorm.DB) (map[string]bool, error) {
	var lists []string
	if err := tx.Raw("SELECT events FROM webhooks WHERE disabled_at IS NULL AND deleted_at IS NULL LOCK IN SHARE MODE").
		Scan(&lists).Error; err != nil {
		return nil, fmt.Errorf("outbox: read the subscribed event types: %w", err)
	}
	wanted := map[string]bool{}
	for _, l := range lists {
		for _, t := range strings.Split(l, ",") {
			wanted[t] = true
		}
	}
	return wanted, nil
}
