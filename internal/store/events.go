package store

import (
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/internal/outbox"
)

// Views render orders and groups as their events carry them: the API's order and group
// objects, which internal/sale defines (sale.EventViews). New takes them, so an event
// and the API show one object.
type Views interface {
	Order(Order) any
	Group(Group) any
}

// orderData and groupData are the data objects of the events (internal/outbox). An
// order event carries its sale's external_ref (Activity.ExternalRef) beside the order,
// when the sale has one. The order is rendered (views) only when the event is written:
// most changes have no endpoint subscribed to their event, and write none.
type (
	orderData struct {
		order       Order
		views       Views
		ExternalRef *string
	}
	groupData struct {
		Group any `json:"group"`
	}
)

// MarshalJSON renders the order as the API shows it: {"order": ..., "external_ref": ...}.
func (d *orderData) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Order       any     `json:"order"`
		ExternalRef *string `json:"external_ref,omitempty"`
	}{d.views.Order(d.order), d.ExternalRef})
}

// orderEvent is the event of a change of o, which it shows (views) as it is after the
// change.
func orderEvent(views Views, typ string, o Order, at time.Time) outbox.Event {
	return outbox.Event{Type: typ, Subject: o.ID, At: at, Data: &orderData{order: o, views: views}}
}

// groupEvent is the event of a group's completion or failure.
func groupEvent(views Views, typ string, g Group, at time.Time) outbox.Event {
	return outbox.Event{Type: typ, Subject: g.ID, At: at, Data: groupData{views.Group(g)}}
}

// record writes events to the outbox with tx, the transaction of their changes
// (outbox.Record), each order event with its sale's external_ref as tx reads it (read
// only when some endpoint subscribes to an order event).
func record(tx *gorm.DB, events ...outbox.Event) error {
	events, err := outbox.Wanted(tx, events)
	if err != nil {
		return err
	}
	var ids []int64
	for _, e := range events {
		if d, ok := e.Data.(*orderData); ok {
			ids = append(ids, d.order.ActivityID)
		}
	}
	if len(ids) > 0 {
		var refs []struct {
			ID          int64
			ExternalRef string
		}
		if err := tx.Model(&Activity{}).Select("id", "external_ref").Where("id IN ? AND external_ref IS NOT NULL", ids).
			Find(&refs).Error; err != nil {
			return fmt.Errorf("read the sales' external_ref: %w", err)
		}
		byID := make(map[int64]*string, len(refs))
		for i := range refs {
			byID[refs[i].ID] = &refs[i].ExternalRef
		}
		for _, e := range events {
			if d, ok := e.Data.(*orderData); ok {
				d.ExternalRef = byID[d.order.ActivityID]
			}
		}
	}
	return outbox.Write(tx, events...)
}
