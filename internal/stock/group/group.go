// Package group keeps the groups of a group-buy sale in Redis: a seat's purchase opens
// or joins a group in the reserve script (internal/stock/reserve); here a group is read
// (Get, OpenGroups), its window extended past a MySQL outage (Extend), failed once its
// window passed unfilled (Fail, DueGroups, Failing, DoneFailing), and written back after
// a rebuild (Restore).
package group

//go:generate go test -run ^TestScripts$ -args -update

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
)

// Groups are the groups of every group-buy sale, on the Redis of a stock.Stock.
type Groups struct {
	sk  *stock.Stock
	rdb redis.UniversalClient
}

// New returns the Groups of sk.
func New(sk *stock.Stock) *Groups { return &Groups{sk: sk, rdb: sk.Redis()} }

// Status is where a group stands; Redis decides it, MySQL follows.
type Status int

// Group statuses, as the reserve and fail scripts write them.
const (
	Open Status = iota
	Complete
	Failed
)

func (s Status) String() string {
	switch s {
	case Complete:
		return "complete"
	case Failed:
		return "failed"
	}
	return "open"
}

// Group is a group of a group-buy sale as Redis holds it.
type Group struct {
	ID         string
	ActivityID int64
	Size       int
	Members    int
	Status     Status
	ExpiresAt  time.Time
	// Seats are the members' orders by buyer (Group with seats only).
	Seats map[buyer.ID]Seat
}

// Seat is one member's order in a group.
type Seat struct {
	OrderID  string
	Quantity int
}

// Get returns a group, with its seats when seats is true, or ErrNoGroup.
func (s *Groups) Get(ctx context.Context, activityID int64, id string, seats bool) (Group, error) {
	groups, err := s.groups(ctx, activityID, []string{id}, seats)
	if err != nil {
		return Group{}, err
	}
	if len(groups) == 0 {
		return Group{}, stock.ErrNoGroup
	}
	return groups[0], nil
}

// OpenGroups returns up to limit of a sale's open groups whose window has not passed
// at now, fullest first, then those that close soonest: the top of the sale's fullest-
// first set, so the cost is that of the groups returned, not of every open group. A
// group whose window has passed but that the worker has not failed yet is skipped.
// ErrNoSale when Redis does not hold the sale, ErrNotGroupSale for a plain one.
func (s *Groups) OpenGroups(ctx context.Context, activityID int64, now time.Time, limit int) ([]Group, error) {
	page := int64(limit + 10)
	out := make([]Group, 0, limit)
	for from := int64(0); ; from += page {
		var sale *redis.SliceCmd
		var ids *redis.StringSliceCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			if from == 0 {
				sale = p.HMGet(ctx, stock.SaleKey(stock.One(activityID)), "start", "kind")
			}
			ids = p.ZRevRange(ctx, stock.FillGroupsKey(stock.One(activityID)), from, from+page-1)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("open groups of sale %d: %w", activityID, err)
		}
		if sale != nil {
			switch v := sale.Val(); {
			case v[0] == nil:
				return nil, stock.ErrNoSale
			case v[1] != "group":
				return nil, stock.ErrNotGroupSale
			}
		}
		groups, err := s.groups(ctx, activityID, ids.Val(), false)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			if g.Status == Open && g.ExpiresAt.After(now) && len(out) < limit {
				out = append(out, g)
			}
		}
		if len(out) == limit || int64(len(ids.Val())) < page {
			return out, nil
		}
	}
}

// groups reads groups in one round trip; a group Redis does not have is left out.
func (s *Groups) groups(ctx context.Context, activityID int64, ids []string, seats bool) ([]Group, error) {
	hashes := make([]*redis.SliceCmd, len(ids))
	members := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			hashes[i] = p.HMGet(ctx, stock.GroupKey(stock.One(activityID), id), "members", "size", "expires", "status")
			if seats {
				members[i] = p.HGetAll(ctx, stock.GroupSeatsKey(stock.One(activityID), id))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read groups of sale %d: %w", activityID, err)
	}
	out := make([]Group, 0, len(ids))
	for i, id := range ids {
		v := hashes[i].Val()
		if v[0] == nil {
			continue
		}
		n, err := stock.Integers(v)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", id, err)
		}
		g := Group{ID: id, ActivityID: activityID, Members: int(n[0]), Size: int(n[1]),
			ExpiresAt: time.UnixMilli(n[2]).UTC(), Status: Status(n[3])}
		if seats {
			g.Seats = map[buyer.ID]Seat{}
			for u, v := range members[i].Val() {
				who, err1 := buyer.FromKey(u)
				order, qty, _ := strings.Cut(v, " ")
				q, err2 := strconv.Atoi(qty)
				if err1 != nil || err2 != nil {
					return nil, fmt.Errorf("group %s: malformed seat %q=%q", id, u, v)
				}
				g.Seats[who] = Seat{OrderID: order, Quantity: q}
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// failScript fails a group whose window has passed unfilled: every seat's units and
// participation go back, at once and once (the status changes in the same step), and
// the group is listed as failing until MySQL has cancelled its orders (fail.lua).
//
//go:embed fail.lua
var failLua string

var failScript = stock.NewScript(failLua, failCodes)

// failCodes are failScript's answers: failed now (groupFailedNow), nothing to do, or
// not yet (ErrGroupPending).
var failCodes = []stock.Code{{Lua: "FAILED_NOW", Value: groupFailedNow}, {Lua: "NOTHING_TO_FAIL", Value: 0},
	{Lua: "SEATS_PENDING", Value: -1, Err: ErrGroupPending}}

// groupFailedNow is FAILED_NOW, a group failed now.
const groupFailedNow = 1

// Windows gives the deadline in force, at now, of a window set to run from start to
// end: the end plus the time MySQL outages took from it (outage.Outages).
type Windows interface {
	Deadline(start, end, now time.Time) time.Time
}

// extendScript gives an open group a later end of its window (extend.lua).
//
//go:embed extend.lua
var extendLua string

var extendScript = stock.NewScript(extendLua, extendCodes)

// extendCodes is extendScript's one code: a group not open (groupNotOpen); its other
// answers are ends.
var extendCodes = []stock.Code{{Lua: "NOT_OPEN", Value: groupNotOpen}}

// groupNotOpen is NOT_OPEN.
const groupNotOpen = -1

// Deadline returns the end in force, at now, of an open group's window: the
// window it was opened with (the sale's group window up to the end it was given then),
// extended by the time MySQL outages took from it (w), or the end the group has if that
// is later; the zero time for a group that is not open or does not exist. It changes
// nothing (Extend writes it).
func (s *Groups) Deadline(ctx context.Context, activityID int64, id string, w Windows, now time.Time) (time.Time, error) {
	d, _, err := s.deadline(ctx, activityID, id, w, now)
	return d, err
}

// deadline is Deadline, which also returns the end the group has.
func (s *Groups) deadline(ctx context.Context, activityID int64, id string, w Windows, now time.Time) (d, shown time.Time, err error) {
	b := stock.One(activityID)
	var g *redis.SliceCmd
	var gwin *redis.StringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		g = p.HMGet(ctx, stock.GroupKey(b, id), "expires", "window", "status")
		gwin = p.HGet(ctx, stock.SaleKey(b), "gwin")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return d, shown, fmt.Errorf("group %s: %w", id, err)
	}
	v := g.Val()
	if v[0] == nil || v[2] != "0" {
		return d, shown, nil
	}
	if v[1] == nil {
		v[1] = v[0] // never extended: the end it was opened with
	}
	n, err := stock.Integers(v[:2])
	seconds, err2 := gwin.Int64()
	if err != nil || err2 != nil {
		return d, shown, fmt.Errorf("group %s: malformed window %v (group window %q)", id, v, gwin.Val())
	}
	end, shown := time.UnixMilli(n[1]).UTC(), time.UnixMilli(n[0]).UTC()
	d = w.Deadline(end.Add(-time.Duration(seconds)*time.Second), end, now)
	if shown.After(d) {
		d = shown
	}
	return d.UTC(), shown, nil
}

// Extend writes Deadline to an open group, when it is later than the end the
// group has, and returns it (the zero time for a group that is not open). Joins, the
// buyers' list and the failing of groups judge by the group's end.
func (s *Groups) Extend(ctx context.Context, activityID int64, id string, w Windows, now time.Time) (time.Time, error) {
	d, shown, err := s.deadline(ctx, activityID, id, w, now)
	if err != nil || !d.After(shown) {
		return d, err
	}
	b := stock.One(activityID)
	keys := []string{stock.GroupKey(b, id), stock.OpenGroupsKey(b), stock.FillGroupsKey(b), stock.SaleKey(b)}
	got, err := extendScript.Run(ctx, s.rdb, keys, id, d.UnixMilli()).Int64()
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("extend group %s: %w", id, err)
	case got == groupNotOpen:
		return time.Time{}, nil
	}
	return time.UnixMilli(got).UTC(), nil
}

// ErrGroupPending is a group that cannot fail yet: a seat's order is still queued.
var ErrGroupPending = errors.New("a seat's order is still on its way to MySQL")

// Fail fails a group whose window passed at or before now without filling: its
// units and participations come back, and it joins the failing groups (Failing) until
// DoneFailing. It reports whether it failed the group now; ErrGroupPending when a
// seat's order is not in MySQL yet (try again later).
func (s *Groups) Fail(ctx context.Context, activityID int64, id string, now time.Time) (bool, error) {
	keys := []string{stock.SaleKey(stock.One(activityID)), stock.UsersKey(stock.One(activityID)), stock.QueuedKey(stock.One(activityID)), stock.GroupKey(stock.One(activityID), id),
		stock.GroupSeatsKey(stock.One(activityID), id), stock.OpenGroupsKey(stock.One(activityID)), stock.FailingKey(stock.One(activityID)), stock.FillGroupsKey(stock.One(activityID))}
	n, err := failScript.Run(ctx, s.rdb, keys, now.UnixMilli(), id, activityID, stock.ReturnedChannel).Int64()
	if err == nil {
		err = stock.AnswerOf(failCodes, n)
	}
	switch {
	case errors.Is(err, ErrGroupPending):
		return false, err
	case err != nil:
		return false, fmt.Errorf("fail group %s: %w", id, err)
	case n == groupFailedNow:
		s.sk.UnitsBack(activityID)
	}
	return n == groupFailedNow, nil
}

// DueGroups returns up to limit ids of a sale's open groups whose window passed at or
// before now.
func (s *Groups) DueGroups(ctx context.Context, activityID int64, now time.Time, limit int) ([]string, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, stock.OpenGroupsKey(stock.One(activityID)), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(limit)}).Result()
	if err != nil {
		return nil, fmt.Errorf("due groups of sale %d: %w", activityID, err)
	}
	return ids, nil
}

// Failing returns the groups of a sale that failed in Redis and whose orders MySQL has
// not yet cancelled.
func (s *Groups) Failing(ctx context.Context, activityID int64) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, stock.FailingKey(stock.One(activityID))).Result()
	if err != nil {
		return nil, fmt.Errorf("failing groups of sale %d: %w", activityID, err)
	}
	return ids, nil
}

// DoneFailing records that MySQL has cancelled a failed group's orders.
func (s *Groups) DoneFailing(ctx context.Context, activityID int64, id string) error {
	return s.rdb.SRem(ctx, stock.FailingKey(stock.One(activityID)), id).Err()
}

// restoreScript writes groups a lost sale had, as MySQL records them, each one only if
// Redis does not have it (restore.lua).
//
//go:embed restore.lua
var restoreLua string

var restoreScript = stock.NewScript(restoreLua, nil)

// restoreChunk is how many groups one restoreScript call writes.
const restoreChunk = 200

// Restore writes the groups of a rebuilt sale, as MySQL records them, that Redis
// does not have (a group Redis still has is newer: its seats may not all be in MySQL
// yet). An open group whose window has passed is failed by the worker as usual; its
// seats' units count as held in the rebuilt sale, so they come back then. It returns
// how many groups it wrote.
func (s *Groups) Restore(ctx context.Context, activityID int64, groups []Group) (int, error) {
	written := 0
	for len(groups) > 0 {
		chunk := groups[:min(restoreChunk, len(groups))]
		groups = groups[len(chunk):]
		keys := []string{stock.OpenGroupsKey(stock.One(activityID)), stock.FillGroupsKey(stock.One(activityID))}
		var args []any
		for _, g := range chunk {
			keys = append(keys, stock.GroupKey(stock.One(activityID), g.ID), stock.GroupSeatsKey(stock.One(activityID), g.ID))
			args = append(args, g.ID, g.Size, g.ExpiresAt.UnixMilli(), int(g.Status), len(g.Seats))
			for who, seat := range g.Seats {
				args = append(args, who.Key(), seat.OrderID+" "+strconv.Itoa(seat.Quantity))
			}
		}
		n, err := restoreScript.Run(ctx, s.rdb, keys, args...).Int()
		if err != nil {
			return written, fmt.Errorf("restore groups of sale %d: %w", activityID, err)
		}
		written += n
	}
	return written, nil
}
