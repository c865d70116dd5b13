package sale

import (
	"context"
	"errors"
	"fmt"
	"time"

	"seckill/internal/apitime"
	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/store"
)

// Group is a group of a group-buy sale as the API shows it: the group object of
// api/openapi.yaml. The events of internal/store carry the same object without its
// members (EventViews; TestEventGroupIsTheAPIGroup).
type Group struct {
	ID         string       `json:"id"`
	ActivityID int64        `json:"activity_id"`
	Size       int          `json:"size"`
	Members    int          `json:"members"`
	Status     string       `json:"status"`
	ExpiresAt  apitime.Time `json:"expires_at"`
	// MemberBuyers are the members, and MemberIDs the user ids of the decimal ones, for
	// admins only.
	MemberBuyers []buyer.Named `json:"member_buyers,omitempty"`
	MemberIDs    []int64       `json:"member_ids,omitempty"`
}

func groupView(g group.Group) Group {
	return Group{ID: g.ID, ActivityID: g.ActivityID, Size: g.Size, Members: g.Members, Status: g.Status.String(),
		ExpiresAt: apitime.Of(g.ExpiresAt)}
}

// Seat opens a group (r.OpenGroup, in sale r.ActivityID) or takes a seat in group
// r.Group: a purchase (Buy), whose order waits in its group until the group fills. It returns the group as the seat left it and the
// queued order; with replayed true, the order an earlier request with the same
// Idempotency-Key made, and its group now. Errors of Buy, and stock.ErrNotGroupSale,
// ErrGroupClosed, ErrAlreadyInGroup, ErrGroupFull; ErrNotFound for an unknown group.
func (s *Groups) Seat(ctx context.Context, r BuyRequest) (Group, Order, bool, error) {
	if r.VariantName != nil {
		return Group{}, Order{}, false, &FieldError{Field: "variant", Message: "is not for a sale of kind group"}
	}
	if !r.OpenGroup {
		id, ok := ActivityOf(r.Group)
		if !ok {
			return Group{}, Order{}, false, ErrNotFound
		}
		r.ActivityID = id
	}
	o, g, replayed, err := s.purchases.buy(ctx, r)
	if errors.Is(err, stock.ErrGroupClosed) && !r.OpenGroup && s.extendGroup(ctx, r.ActivityID, r.Group) {
		o, g, replayed, err = s.purchases.buy(ctx, r) // judged by the window an outage extended
	}
	switch {
	case errors.Is(err, stock.ErrNoGroup):
		return Group{}, Order{}, false, ErrNotFound
	case err != nil:
		return Group{}, Order{}, false, err
	case g != nil:
		gv := groupView(*g)
		if g.Status == group.Open { // the seat's deadline in force is its group's (Orders.inForce)
			o.ExpiresAt = gv.ExpiresAt
		}
		return gv, o, replayed, nil
	}
	if o.GroupID == "" { // a replayed key of a purchase of another kind: cannot happen in one sale
		return Group{}, Order{}, false, fmt.Errorf("order %s has no group", o.ID)
	}
	gr, err := s.GetGroup(ctx, o.GroupID)
	return gr, o, replayed, err
}

// extendGroup gives a group whose window has passed as Redis shows it the time MySQL
// outages took from its window, and reports whether it is open longer now: a join that
// comes during an outage, or the instant after, before the worker has extended the
// group, is judged by the extended window. Only a refused join pays for this.
func (s *Groups) extendGroup(ctx context.Context, activityID int64, id string) bool {
	outages, err := s.outages.Read(ctx)
	if err != nil {
		return false
	}
	now := s.now()
	end, err := s.groups.Extend(ctx, activityID, id, outages, now)
	return err == nil && end.After(now)
}

// GetGroup returns a group, or ErrNotFound; a group of an archived sale as MySQL keeps
// it.
func (s *Groups) GetGroup(ctx context.Context, id string) (Group, error) {
	activityID, ok := ActivityOf(id)
	if !ok {
		return Group{}, ErrNotFound
	}
	g, err := s.groups.Get(ctx, activityID, id, false)
	if errors.Is(err, stock.ErrNoGroup) {
		return s.archivedGroup(ctx, activityID, id)
	}
	if err != nil {
		return Group{}, err
	}
	v := groupView(g)
	if g.Status == group.Open && !g.ExpiresAt.After(s.now()) { // an outage may have extended it
		if end := s.groupEnd(ctx, activityID, id); end.After(v.ExpiresAt.Time) {
			v.ExpiresAt = apitime.Of(end)
		}
	}
	return v, nil
}

// archivedGroup returns a group of an archived sale from MySQL, without its members;
// ErrNotFound for a group of a sale that is not archived (Redis holds every group of
// those).
func (s *Groups) archivedGroup(ctx context.Context, activityID int64, id string) (Group, error) {
	// Redis has no such group: MySQL is asked only for a sale the public list's snapshot
	// shows archived, so that a crowd asking for groups that do not exist does not reach it.
	if !s.archived.known(activityID) {
		a, err := s.catalog.listed(ctx, activityID)
		if err != nil {
			return Group{}, err
		}
		if a == nil || a.ArchivedAt == nil {
			return Group{}, ErrNotFound
		}
		s.archived.remember(activityID)
	}
	g, err := s.store.Orders.GetGroup(ctx, id)
	if err != nil {
		return Group{}, err
	}
	v := storedGroupView(g)
	v.MemberBuyers, v.MemberIDs = nil, nil
	return v, nil
}

// groupEnd is the end in force of an open group's window, as MySQL outages extended
// it (stock.GroupDeadline); the zero time for a group that is not open, or when it
// cannot be told.
func (s *Groups) groupEnd(ctx context.Context, activityID int64, id string) time.Time {
	outages, err := s.outages.Read(ctx)
	if err != nil {
		return time.Time{}
	}
	end, _ := s.groups.Deadline(ctx, activityID, id, outages, s.now())
	return end
}

// OpenGroups returns up to limit of a group-buy sale's open groups, fullest first, from
// Redis alone. ErrNotFound for an unknown sale; stock.ErrNotGroupSale for a plain one;
// ErrUnavailable while a sale Redis lost is rebuilt.
func (s *Groups) OpenGroups(ctx context.Context, activityID int64, limit int) ([]Group, error) {
	gs, err := s.groups.OpenGroups(ctx, activityID, s.now(), limit)
	if errors.Is(err, stock.ErrNoSale) {
		if err := s.catalog.MissingSale(ctx, activityID); !errors.Is(err, errArchivedSale) {
			return nil, err
		}
		return []Group{}, nil // an archived sale has no open group
	}
	if err != nil {
		return nil, err
	}
	out := make([]Group, len(gs))
	for i, g := range gs {
		out[i] = groupView(g)
	}
	return out, nil
}

// AllGroups returns up to limit of a group-buy sale's groups as MySQL records them
// (open, complete and failed; a group appears with its first stored seat), newest
// first, with their members. ErrNotFound for an unknown sale; stock.ErrNotGroupSale for
// a plain one.
func (s *Groups) AllGroups(ctx context.Context, activityID int64, limit int) ([]Group, error) {
	a, err := s.store.Activities.GetActivity(ctx, activityID)
	if err != nil {
		return nil, err
	}
	if a.Kind != KindGroup {
		return nil, stock.ErrNotGroupSale
	}
	gs, err := s.store.Orders.ListGroups(ctx, activityID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Group, len(gs))
	for i, g := range gs {
		out[i] = storedGroupView(g)
	}
	return out, nil
}

// storedGroupView shows a group MySQL holds, with its members.
func storedGroupView(g store.Group) Group {
	v := Group{ID: g.ID, ActivityID: g.ActivityID, Size: g.Size, Members: g.Members, Status: g.Status,
		ExpiresAt: apitime.Of(g.ExpiresAt)}
	for _, m := range g.Buyers {
		named := m.Named()
		v.MemberBuyers = append(v.MemberBuyers, named)
		if named.UserID != 0 {
			v.MemberIDs = append(v.MemberIDs, named.UserID)
		}
	}
	return v
}
