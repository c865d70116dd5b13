package store

import (
	"time"

	"seckill/internal/outbox"
)

// orderData and groupData are the data objects of the events (internal/outbox).
type (
	orderData struct {
		Order eventOrder `json:"order"`
	}
	groupData struct {
		Group eventGroup `json:"group"`
	}
)

// orderEvent is the event of a change of o, which it shows as it is after the change.
func orderEvent(typ string, o Order, at time.Time) outbox.Event {
	return outbox.Event{Type: typ, Subject: o.ID, At: at, Data: orderData{eventView(o)}}
}

// groupEvent is the event of a group's completion or failure.
func groupEvent(typ string, g Group, at time.Time) outbox.Event {
	return outbox.Event{Type: typ, Subject: g.ID, At: at, Data: groupData{eventGroupView(g)}}
}
