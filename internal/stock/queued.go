package stock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// QueuedOrder is an order taken from stock that the worker has not yet settled.
type QueuedOrder struct {
	OrderID    string
	ActivityID int64
	UserID     int64
	Quantity   int
	CreatedAt  time.Time
	// Limit is the per-user limit the reservation was checked against.
	Limit int
	// Participations is the cap on a user's orders it was checked against (0: none).
	Participations int
	// Group, GroupSize and GroupExpiresAt are the seat's group ("" for a purchase).
	Group          string
	GroupSize      int
	GroupExpiresAt time.Time
	// Claimed is true once a worker has begun to persist the order (Stale only).
	Claimed bool
}

// A queued order is the value of its id in the queued hash: "user quantity created
// limit", created in unix ms and limit the per-user limit it was checked against, and,
// in a sale that caps participations or sells in groups, " cap group size expires":
// the cap it was checked against (0: none), and its group's id, size and end (unix ms),
// "- 0 0" outside a group. Go and Lua each have one encoder and one decoder of it, side
// by side here; TestQueuedValueOneFormat holds the two languages to it.

// queuedValue is q's value in the queued hash.
func queuedValue(q QueuedOrder) string {
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, q.UserID, 10)
	b = strconv.AppendInt(append(b, ' '), int64(q.Quantity), 10)
	b = strconv.AppendInt(append(b, ' '), q.CreatedAt.UnixMilli(), 10)
	b = strconv.AppendInt(append(b, ' '), int64(q.Limit), 10)
	switch {
	case q.Group != "":
		b = strconv.AppendInt(append(b, ' '), int64(q.Participations), 10)
		b = append(append(append(b, ' '), q.Group...), ' ')
		b = strconv.AppendInt(b, int64(q.GroupSize), 10)
		b = strconv.AppendInt(append(b, ' '), q.GroupExpiresAt.UnixMilli(), 10)
	case q.Participations > 0:
		b = strconv.AppendInt(append(b, ' '), int64(q.Participations), 10)
		b = append(b, " - 0 0"...)
	}
	return string(b)
}

// parseQueued reads the value v of order orderID of a sale's queued hash.
func parseQueued(activityID int64, orderID, v string) (QueuedOrder, error) {
	f := strings.Fields(v)
	if len(f) != 4 && len(f) != 8 {
		return QueuedOrder{}, fmt.Errorf("queued order %s: malformed %q", orderID, v)
	}
	var n [8]int64
	for i := range f {
		if i == 5 {
			continue // the group id
		}
		var err error
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return QueuedOrder{}, fmt.Errorf("queued order %s: malformed %q", orderID, v)
		}
	}
	q := QueuedOrder{OrderID: orderID, ActivityID: activityID, UserID: n[0], Quantity: int(n[1]),
		CreatedAt: time.UnixMilli(n[2]).UTC(), Limit: int(n[3]), Participations: int(n[4])}
	if len(f) == 8 && f[5] != "-" {
		q.Group, q.GroupSize, q.GroupExpiresAt = f[5], int(n[6]), time.UnixMilli(n[7]).UTC()
	}
	return q, nil
}

// queuedLua is the Lua side of the same format. Its fields are strings, as the
// script's arguments and Redis' values are, so nothing is converted that is not
// compared (a number turned into a string costs the server more than the whole value).
//
//	queued_value(user, qty, created, limit, cap, group, size, expires): the value; cap
//	  nil or 0 and group nil for no participations counted and no group
//	parse_queued(v): user, qty, created, limit, cap, group, size, expires; cap nil when
//	  the sale counts no participations, group, size and expires nil outside a group
const queuedLua = `
local function queued_value(user, qty, created, limit, cap, group, size, expires)
  local v = user .. ' ' .. qty .. ' ' .. created .. ' ' .. limit
  if group then return v .. ' ' .. (cap or 0) .. ' ' .. group .. ' ' .. size .. ' ' .. expires end
  if cap and tonumber(cap) > 0 then return v .. ' ' .. cap .. ' - 0 0' end
  return v
end
local function parse_queued(v)
  local user, qty, created, limit, tail = string.match(v, '^(%d+) (%d+) (%d+) (%d+)(.*)$')
  local cap, group, size, expires
  if tail ~= '' then
    cap, group, size, expires = string.match(tail, '^ (%d+) (%S+) (%d+) (%d+)$')
    if group == '-' then group, size, expires = nil, nil, nil end
  end
  return user, qty, created, limit, cap, group, size, expires
end
`
