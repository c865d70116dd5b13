package store

import (
	"time"

	"seckill/internal/outbox"
)

// Views render orders and groups as their events carry them: the API's order and group
// objects, which internal/sale defines (sale.EventViews). New takes them, so an event
// and the API show one object.
type Views interface {
	Order(Order) any
	Group(Group) any
}

// orderData and groupData are the data objects of the events (internal/outbox).
type (
	orderData struct {
		Order any `json:"order"`
	}
	groupData struct {
		Group any `json:"group"`
	}
)

// orderEvent is the event of a change of o, which it shows as it is after the change.
func (s *Store) orderEvent(typ string, o Order, at time.Time) outbox.Event {
	return outbox.Event{Type: typ, Subject: o.ID, At: at, Data: orderData{s.views.Order(o)}}
}

// groupEvent is the event of a group's completion or failure.
func (s *Store) groupEvent(typ string, g Group, at time.Time) outbox.Event {
	return outbox.Event{Type: typ, Subject: g.ID, At: at, Data: groupData{s.views.Group(g)}}
}
