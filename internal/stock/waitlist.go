package stock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
)

// The waitlist of a sale (docs/internals.md, "Buyers and variants: how they are kept")
// lives in the sale's slot: waitlist:entries, a hash of buyer key -> the buyer's entry
// (entryLua's format), and per variant (or for the sale without variants) a sorted set
// of the waiting buyers' keys by their join sequence (waitlistKey). Units that come back
// (a cancel, an expired pay window, a refund with restock, a failed order) are offered
// there first, in the script that gives them back (offerLua): the first waiting entry
// whose quantity fits, and whose buyer stays within the limits with it, gets a queued
// order of them at once, marked offered, as a purchase would have made it; the units go
// back on open sale only when no entry fits. A sale of several buckets has no waitlist:
// its units come back to the buyers' home buckets, in other slots.

// Errors of the waitlist.
var (
	// ErrNotSoldOut is a join while the sale (the variant) has units on sale.
	ErrNotSoldOut = errors.New("units are on sale: buy them instead")
	// ErrNoEntry is a buyer without an entry on the sale's waitlist.
	ErrNoEntry = errors.New("no waitlist entry")
	// ErrNoWaitlist is a sale of several stock buckets, which has no waitlist.
	ErrNoWaitlist = errors.New("the sale keeps its stock in several buckets, whose returns go back on sale: it has no waitlist")
)

// Waitlist entry statuses.
const (
	EntryWaiting = "waiting"
	EntryOffered = "offered"
	EntryEnded   = "ended"
)

// Entry is a buyer's place on a sale's waitlist.
type Entry struct {
	ActivityID int64
	Buyer      buyer.ID
	Variant    Variant
	Quantity   int
	// Position is the place among the entries still waiting (1: the next to be offered
	// units), 0 once not waiting.
	Position int
	Status   string
	JoinedAt time.Time
	// OrderID is the order of the units offered, once offered.
	OrderID string
}

// waitlistEntriesKey is the hash of the sale's waitlist entries by buyer key.
func waitlistEntriesKey(b Bucket) string { return prefix(b) + "waitlist:entries" }

// waitlistKey is the sorted set of the buyers waiting for units of variant v (none: of
// the sale), by join sequence.
func waitlistKey(b Bucket, v Variant) string {
	if i, ok := v.Index(); ok {
		return prefix(b) + "waitlist:" + strconv.Itoa(i)
	}
	return prefix(b) + "waitlist:-"
}

// entryLua reads and writes an entry, "<seq> <qty> <variant or -> <joined ms> <status>
// <order or ->" with status w (waiting), o (offered) or e (ended):
//
//	parse_entry(v): {seq, qty, variant (nil: none), joined, status, order (nil: none)}
//	entry_value(e): the value of e
const entryLua = `
local function parse_entry(v)
  if not v then return nil end
  local seq, qty, variant, joined, status, order = string.match(v, '^(%d+) (%d+) (%S+) (%d+) (%a) (%S+)$')
  if not seq then return nil end
  if variant == '-' then variant = nil end
  if order == '-' then order = nil end
  return {seq = seq, qty = tonumber(qty), variant = variant, joined = joined, status = status, order = order}
end
local function entry_value(e)
  return e.seq .. ' ' .. string.format('%d', e.qty) .. ' ' .. (e.variant or '-') .. ' ' .. e.joined .. ' ' .. e.status ..
    ' ' .. (e.order or '-')
end
`

// offerLua gives units that came back to the waitlist first. It follows unitsLua and
// entryLua.
//
//	offer(w, variant): w = {sale, users, queued, since, entries, set (the variant's
//	  waiting set), prefix (the bucket's key prefix), now (ms, a string), ids (order
//	  ids minted for offers), next (the first unused id), offers (out: id, value, ...)};
//	  offers the units of variant (nil: the sale's) left in the sale to the waiting
//	  entries in join order while they last: each entry whose quantity fits, and whose
//	  buyer's holding stays within the limits with it, gets a queued order of them
//	  (marked offered), its status offered with the order's id. An entry that does not
//	  fit stays waiting. Nothing happens once the sale has ended, or without an id left.
//
// The queued set of the buyer offered units is named here from the bucket's prefix: the
// buyer is known only once the script has read the waitlist.
const offerLua = `
local function offer(w, variant)
  if redis.call('ZCARD', w.set) == 0 then return end
  local field = vfield('avail', variant)
  local s = redis.call('HMGET', w.sale, 'avail', field, 'limit', 'plimit', 'vlimit', 'kind', 'end')
  if not s[1] or tonumber(w.now) >= tonumber(s[7]) then return end
  local avail, left, limit_text = tonumber(s[1]), tonumber(s[2] or '0'), s[3]
  local limit, cap, vlimit = tonumber(limit_text), tonumber(s[4] or '0'), tonumber(s[5] or '0')
  local count = counted(cap, s[6] == 'group')
  -- Pages of the waiting set by join sequence, each after the last one read: an entry
  -- that does not fit is passed over, however many there are before one that does.
  local after, page = '-inf', {}
  local i = 1
  while left > 0 and w.next <= #w.ids do
    if i > #page then
      page = redis.call('ZRANGEBYSCORE', w.set, after, '+inf', 'WITHSCORES', 'LIMIT', 0, 100)
      if #page == 0 then break end
      after, i = '(' .. page[#page], 1
    end
    local user = page[i]
    i = i + 2
    local e = parse_entry(redis.call('HGET', w.entries, user))
    if not e or e.status ~= 'w' then
      redis.call('ZREM', w.set, user)
    elseif e.qty <= left then
      local held, parts = holding(w.users, hget, user, count)
      local over = user_refused(held, e.qty, limit, parts, cap)
      if not over and variant and vlimit > 0 then over = variant_held(w.users, user, variant) + e.qty > vlimit end
      if not over then
        local id = w.ids[w.next]
        w.next = w.next + 1
        avail, left = avail - e.qty, left - e.qty
        hold(w.users, hset, user, held, parts, e.qty, count)
        if variant and vlimit > 0 then hold_variant(w.users, user, variant, e.qty) end
        local v = queued_value({user = user, qty = string.format('%d', e.qty), now = w.now, variant = variant or '',
          offered = true}, limit_text, cap)
        redis.call('HSET', w.queued, id, v)
        redis.call('SADD', w.prefix .. 'queued:user:' .. user, id)
        redis.call('ZADD', w.since, w.now, id)
        redis.call('HINCRBY', w.sale, 'qunits', string.format('%d', e.qty))
        e.status, e.order = 'o', id
        redis.call('HSET', w.entries, user, entry_value(e))
        redis.call('ZREM', w.set, user)
        w.offers[#w.offers + 1], w.offers[#w.offers + 2] = id, v
      end
    end
  end
  local fields = {'avail', string.format('%d', avail)}
  if variant then fields[3], fields[4] = field, string.format('%d', left) end
  redis.call('HSET', w.sale, unpack(fields))
end
`

// offerIDs mints n order ids of a sale for units a script may offer: what a purchase's
// order id is (a ULID and the activity id), so an offered order is found as any other.
func offerIDs(activityID int64, now time.Time, n int) []any {
	ids := make([]any, n)
	for i := range ids {
		ids[i] = NewOrderID(activityID, now)
	}
	return ids
}

// NewOrderID returns an unguessable order id: a ULID (time + 80 random bits from
// crypto/rand) followed by the activity id, so a queued order can be found in Redis.
// Clients treat it as opaque.
func NewOrderID(activityID int64, now time.Time) string {
	return ulid.MustNew(ulid.Timestamp(now), rand.Reader).String() + strconv.FormatInt(activityID, 10)
}

// maxOffers bounds the orders one return's script may make for the waitlist.
const maxOffers = 100

// offered reads the offers a giving-back script answered after its first n values: id,
// queued value, ..., as queued orders.
func offered(activityID int64, vs []any) ([]QueuedOrder, error) {
	if len(vs)%2 != 0 {
		return nil, fmt.Errorf("offers: %d values", len(vs))
	}
	var out []QueuedOrder
	for i := 0; i < len(vs); i += 2 {
		id, ok1 := vs[i].(string)
		v, ok2 := vs[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("offers: unexpected reply %v", vs[i:i+2])
		}
		q, err := parseQueued(activityID, id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// joinScript puts a buyer on a sale's waitlist, or answers the entry they have.
//
// KEYS[1] sale: sale hash  KEYS[2] users: users hash  KEYS[3] entries: waitlist entries
// KEYS[4] set: the waiting set of the variant asked for
// ARGV[1] user: the buyer's key  ARGV[2] qty: quantity  ARGV[3] variant: the variant's
// index, "" for none  ARGV[4] now: now (ms)  ARGV[5] prefix: the waitlist key prefix
// (an entry's waiting set is it and the entry's variant, or "-")  ARGV[6] ticket: "1"
// when the buyer holds a ticket of the sale's line (its waiting room), else "0"
//
// Returns {JOINED | ENTRY (the entry there already, as it is: its own variant and
// position, whatever the variant asked for), seq, qty, variant ("" none), joined,
// status, order ("" none), position (0 when not waiting)}, or a refusal of
// joinCodes {code, ...}: NO_SALE (lost or archived), GROUP_SALE, NO_VARIANT (none of
// the sale's), NOT_ADMITTED (a sale with a waiting room, and no ticket of its line),
// ENDED, NOT_SOLD_OUT (units are on sale), OVER_LIMIT {held, limit} past
// the limit, QUANTITY_OVER_LIMIT {limit} a quantity above the limit,
// OVER_VARIANT_LIMIT {held, limit} past the per-variant limit.
var joinScript = newScript(joinCodes, buyerFieldsLua+entryLua+variantsLua, `
local sale, users, entries, set = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, qty, variant, now, prefix, ticket = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6]
`, `
local s = redis.call('HMGET', sale, 'total', 'kind', 'variants', 'end', 'avail', 'limit', 'vlimit', 'archived', 'room')
if not s[1] or s[8] then return {NO_SALE} end
if s[2] == 'group' then return {GROUP_SALE} end
local variants = tonumber(s[3] or '0')
if variant == '' then variant = nil end
if (variants > 0) ~= (variant ~= nil) or (variant and tonumber(variant) >= variants) then return {NO_VARIANT} end
local function answer(code, e)
  local pos = 0
  if e.status == 'w' then pos = (redis.call('ZRANK', prefix .. (e.variant or '-'), user) or -1) + 1 end
  return {code, e.seq, string.format('%d', e.qty), e.variant or '', e.joined, e.status, e.order or '', pos}
end
local e = parse_entry(redis.call('HGET', entries, user))
if e and e.status ~= 'e' then return answer(ENTRY, e) end
if s[9] == '1' and ticket ~= '1' then return {NOT_ADMITTED} end
if tonumber(now) >= tonumber(s[4]) then return {ENDED} end
local left = s[5]
if variant then left = redis.call('HGET', sale, vfield('avail', variant)) end
if tonumber(left or '0') > 0 then return {NOT_SOLD_OUT} end
local limit = tonumber(s[6])
if qty > limit then return {QUANTITY_OVER_LIMIT, limit} end
local held = tonumber(redis.call('HGET', users, user) or '0')
if held + qty > limit then return {OVER_LIMIT, held, limit} end
local vlimit = tonumber(s[7] or '0')
if variant and vlimit > 0 then
  local vheld = tonumber(redis.call('HGET', users, VARIANT .. variant .. ':' .. user) or '0')
  if vheld + qty > vlimit then return {OVER_VARIANT_LIMIT, vheld, vlimit} end
end
local seq = redis.call('HINCRBY', sale, 'wlseq', 1)
e = {seq = string.format('%d', seq), qty = qty, variant = variant, joined = now, status = 'w'}
redis.call('HSET', entries, user, entry_value(e))
redis.call('ZADD', set, seq, user)
return answer(JOINED, e)
`)

// joinCodes are joinScript's answers: an entry, new (joinedNow) or there already, or a
// refusal, of which three come with figures.
var joinCodes = []scriptCode{{"JOINED", joinedNow, nil}, {"ENTRY", 1, nil}, {"NO_SALE", -1, ErrNoSale},
	{"GROUP_SALE", -2, ErrGroupSale}, {"NO_VARIANT", -3, ErrNoVariant}, {"ENDED", -4, ErrEnded},
	{"NOT_SOLD_OUT", -5, ErrNotSoldOut}, {"OVER_LIMIT", joinOverLimit, ErrLimitExceeded},
	{"QUANTITY_OVER_LIMIT", joinQuantityOverLimit, ErrQuantityOverLimit},
	{"OVER_VARIANT_LIMIT", joinOverVariantLimit, ErrLimitExceeded}, {"NOT_ADMITTED", -9, errWaitlistNotAdmitted}}

// errWaitlistNotAdmitted is a join of the waitlist of a sale with a waiting room by a
// buyer without a ticket of its line: the line decides who gets a sale's units, those
// that come back included.
var errWaitlistNotAdmitted = &DetailError{ErrNotAdmitted, "its waitlist takes only buyers who hold a ticket of its line"}

// The codes of joinCodes that Go tells apart.
const (
	joinedNow             = 0
	joinOverLimit         = -6
	joinQuantityOverLimit = -7
	joinOverVariantLimit  = -8
)

// readScript reads a buyer's entry, with its position while waiting.
//
// KEYS[1] entries: waitlist entries  ARGV[1] user: the buyer's key  ARGV[2] prefix: the
// waitlist key prefix (the waiting set is it and the entry's variant, or "-")
// Returns {} for none, else {seq, qty, variant, joined, status, order, position}.
var readScript = newScript(nil, entryLua, `
local entries, user, prefix = KEYS[1], ARGV[1], ARGV[2]
`, `
local e = parse_entry(redis.call('HGET', entries, user))
if not e then return {} end
local pos = 0
if e.status == 'w' then pos = (redis.call('ZRANK', prefix .. (e.variant or '-'), user) or -1) + 1 end
return {e.seq, string.format('%d', e.qty), e.variant or '', e.joined, e.status, e.order or '', pos}
`)

// leaveScript takes a buyer off the waitlist: the entry goes (an order offered stays).
//
// KEYS[1] entries: waitlist entries  ARGV[1] user: the buyer's key  ARGV[2] prefix: the
// waitlist key prefix
// Returns a code of leaveCodes: LEFT when there was an entry, else NO_ENTRY.
var leaveScript = newScript(leaveCodes, entryLua, `
local entries, user, prefix = KEYS[1], ARGV[1], ARGV[2]
`, `
local e = parse_entry(redis.call('HGET', entries, user))
if not e then return NO_ENTRY end
redis.call('ZREM', prefix .. (e.variant or '-'), user)
redis.call('HDEL', entries, user)
return LEFT
`)

// leaveCodes are leaveScript's answers: the entry gone, or none (ErrNoEntry).
var leaveCodes = []scriptCode{{"LEFT", 1, nil}, {"NO_ENTRY", 0, ErrNoEntry}}

// waitlistPrefix is the prefix of a sale's waiting sets (waitlistKey without its
// variant).
func waitlistPrefix(b Bucket) string { return prefix(b) + "waitlist:" }

// JoinWaitlist puts a buyer on the waitlist of a sale (a variant of it) for quantity
// units, and returns the entry and whether it is new (false: the entry the buyer had,
// unchanged). A buyer whose entry ended joins anew. ticket says whether the buyer
// holds a ticket of the sale's line: a sale with a waiting room takes no one else.
// Errors: ErrNoSale, ErrGroupSale, ErrNoVariant, ErrNotAdmitted, ErrEnded, ErrNotSoldOut
// (units are on sale), ErrLimitExceeded (the buyer's holding with quantity would pass
// the limit or the per-variant limit), ErrQuantityOverLimit, ErrNoWaitlist (a sale of
// several buckets).
func (s *Stock) JoinWaitlist(ctx context.Context, activityID int64, who buyer.ID, quantity int, v Variant, now time.Time, ticket bool) (Entry, bool, error) {
	sale, err := s.saleOf(ctx, activityID)
	if err != nil {
		return Entry{}, false, err
	}
	if sale.k > 1 {
		return Entry{}, false, ErrNoWaitlist
	}
	keys := []string{saleKey(sale), usersKey(sale), waitlistEntriesKey(sale), waitlistKey(sale, v)}
	res, err := reply(joinScript.Run(ctx, s.rdb, keys, who.Key(), quantity, v.arg(), now.UnixMilli(),
		waitlistPrefix(sale), flag(ticket)).Result())
	if err != nil {
		return Entry{}, false, fmt.Errorf("join waitlist: %w", err)
	}
	n, err := integer(res[0])
	if err != nil {
		return Entry{}, false, fmt.Errorf("join waitlist: %w", err)
	}
	c, err := codeOf(joinCodes, n)
	switch {
	case err != nil:
		return Entry{}, false, fmt.Errorf("join waitlist: %w", err)
	case c.err == nil:
		e, err := parseEntry(activityID, who, res[1:])
		return e, n == joinedNow, err
	case n != joinOverLimit && n != joinQuantityOverLimit && n != joinOverVariantLimit:
		return Entry{}, false, c.err
	}
	vals, err := integers(res[1:])
	switch {
	case err != nil:
		return Entry{}, false, fmt.Errorf("join waitlist: %w", err)
	case n == joinOverLimit && len(vals) == 2:
		return Entry{}, false, &DetailError{ErrLimitExceeded, fmt.Sprintf("you hold %d of at most %d units", vals[0], vals[1])}
	case n == joinQuantityOverLimit && len(vals) == 1:
		return Entry{}, false, &DetailError{ErrQuantityOverLimit, fmt.Sprintf("quantity must be between 1 and %d", vals[0])}
	case n == joinOverVariantLimit && len(vals) == 2:
		return Entry{}, false, &DetailError{ErrLimitExceeded, fmt.Sprintf("you hold %d of at most %d units of this variant", vals[0], vals[1])}
	}
	return Entry{}, false, fmt.Errorf("join waitlist: unexpected reply %v", res)
}

// WaitlistEntry returns a buyer's entry on a sale's waitlist, or ErrNoEntry.
func (s *Stock) WaitlistEntry(ctx context.Context, activityID int64, who buyer.ID) (Entry, error) {
	sale := one(activityID)
	res, err := readScript.Run(ctx, s.rdb, []string{waitlistEntriesKey(sale)}, who.Key(), waitlistPrefix(sale)).Slice()
	if err != nil {
		return Entry{}, fmt.Errorf("read waitlist entry: %w", err)
	}
	if len(res) == 0 {
		return Entry{}, ErrNoEntry
	}
	return parseEntry(activityID, who, res)
}

// LeaveWaitlist takes a buyer off a sale's waitlist; ErrNoEntry when they had no entry.
func (s *Stock) LeaveWaitlist(ctx context.Context, activityID int64, who buyer.ID) error {
	sale := one(activityID)
	n, err := leaveScript.Run(ctx, s.rdb, []string{waitlistEntriesKey(sale)}, who.Key(), waitlistPrefix(sale)).Int64()
	if err != nil {
		return fmt.Errorf("leave waitlist: %w", err)
	}
	return answerOf(leaveCodes, n)
}

// WaitlistLength returns how many entries of a sale's waitlist are waiting.
func (s *Stock) WaitlistLength(ctx context.Context, activityID int64, variants int) (int64, error) {
	sale := one(activityID)
	cmds := make([]*redis.IntCmd, 0, max(1, variants))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if variants == 0 {
			cmds = append(cmds, p.ZCard(ctx, waitlistKey(sale, 0)))
		}
		for i := range variants {
			cmds = append(cmds, p.ZCard(ctx, waitlistKey(sale, VariantAt(i))))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read waitlist length: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// parseEntry reads an entry as the scripts answer it: seq, qty, variant, joined, status,
// order, position.
func parseEntry(activityID int64, who buyer.ID, vs []any) (Entry, error) {
	if len(vs) != 7 {
		return Entry{}, fmt.Errorf("waitlist entry: unexpected reply %v", vs)
	}
	str := func(v any) string { s, _ := v.(string); return s }
	qty, err1 := strconv.Atoi(str(vs[1]))
	joined, err2 := strconv.ParseInt(str(vs[3]), 10, 64)
	pos, err3 := integer(vs[6])
	if err := errors.Join(err1, err2, err3); err != nil {
		return Entry{}, fmt.Errorf("waitlist entry: %w", err)
	}
	e := Entry{ActivityID: activityID, Buyer: who, Quantity: qty, JoinedAt: time.UnixMilli(joined).UTC(),
		OrderID: str(vs[5]), Position: int(pos)}
	if v := str(vs[2]); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil {
			return Entry{}, fmt.Errorf("waitlist entry: variant %q", v)
		}
		e.Variant = VariantAt(i)
	}
	switch str(vs[4]) {
	case "w":
		e.Status = EntryWaiting
	case "o":
		e.Status = EntryOffered
	case "e":
		e.Status = EntryEnded
	default:
		return Entry{}, fmt.Errorf("waitlist entry: status %q", str(vs[4]))
	}
	return e, nil
}

// endOfferLua ends the entry of an offered order that comes back (cancelled, expired,
// failed, refunded): it reads ended. It follows entryLua.
//
//	end_offer(entries, user, id): the entry of user, if offered order id, ends
const endOfferLua = `
local function end_offer(entries, user, id)
  local e = parse_entry(redis.call('HGET', entries, user))
  if e and e.status == 'o' and e.order == id then
    e.status = 'e'
    redis.call('HSET', entries, user, entry_value(e))
  end
end
`
