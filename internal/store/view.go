package store

import "time"

// eventOrder is the order object the events carry: the API's order object (sale.Order),
// which internal/sale builds from the same row; TestEventOrderIsTheAPIOrder holds the
// two to one JSON.
type eventOrder struct {
	ID            string     `json:"id"`
	ActivityID    int64      `json:"activity_id"`
	UserID        int64      `json:"user_id"`
	Quantity      int        `json:"quantity"`
	AmountCents   int64      `json:"amount_cents"`
	Status        string     `json:"status"`
	CreatedAt     time.Time  `json:"created_at"`
	ExpiresAt     time.Time  `json:"expires_at"`
	PaidAt        *time.Time `json:"paid_at,omitempty"`
	FailureReason string     `json:"failure_reason,omitempty"`
	GroupID       string     `json:"group_id,omitempty"`
}

// eventView is o as its events show it, its times in UTC.
func eventView(o Order) eventOrder {
	v := eventOrder{ID: o.ID, ActivityID: o.ActivityID, UserID: o.UserID, Quantity: o.Quantity,
		AmountCents: o.AmountCents, Status: o.Status, CreatedAt: o.CreatedAt.UTC(),
		ExpiresAt: o.ExpiresAt.UTC(), FailureReason: deref(o.FailureReason), GroupID: deref(o.GroupID)}
	if o.PaidAt != nil {
		t := o.PaidAt.UTC()
		v.PaidAt = &t
	}
	return v
}

// eventGroup is the group object the events carry: the API's group object (sale.Group)
// without its members, which only admins see; TestEventGroupIsTheAPIGroup holds the two
// to one JSON.
type eventGroup struct {
	ID         string    `json:"id"`
	ActivityID int64     `json:"activity_id"`
	Size       int       `json:"size"`
	Members    int       `json:"members"`
	Status     string    `json:"status"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// eventGroupView is g as its events show it, its time in UTC.
func eventGroupView(g Group) eventGroup {
	return eventGroup{ID: g.ID, ActivityID: g.ActivityID, Size: g.Size, Members: g.Members, Status: g.Status,
		ExpiresAt: g.ExpiresAt.UTC()}
}
