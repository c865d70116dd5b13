package settle

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
)

// The waitlist of a sale (docs/internals/redis-data.md, "The waitlist")
// lives in the sale's slot: waitlist:entries, a hash of buyer key -> the buyer's entry
// (entry.lua's format), and per variant (or for the sale without variants) a sorted set
// of the waiting buyers' keys by their join sequence (stock.WaitlistKey). Units that come back
// (a cancel, an expired pay window, a refund with restock, a failed order) are offered
// there first, in the script that gives them back (offer.lua): the first waiting entry
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
	Variant    stock.Variant
	Quantity   int
	// Position is the place among the entries still waiting (1: the next to be offered
	// units), 0 once not waiting.
	Position int
	Status   string
	JoinedAt time.Time
	// OrderID is the order of the units offered, once offered.
	OrderID string
}

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
func offered(activityID int64, vs []any) ([]stock.QueuedOrder, error) {
	if len(vs)%2 != 0 {
		return nil, fmt.Errorf("offers: %d values", len(vs))
	}
	var out []stock.QueuedOrder
	for i := 0; i < len(vs); i += 2 {
		id, ok1 := vs[i].(string)
		v, ok2 := vs[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("offers: unexpected reply %v", vs[i:i+2])
		}
		q, err := stock.ParseQueued(activityID, id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// joinScript puts a buyer on a sale's waitlist, or answers the entry they have
// (join.lua).
//
//go:embed join.lua
var joinLua string
var joinScript = stock.NewScript(joinLua, joinCodes)

// joinCodes are joinScript's answers: an entry, new (joinedNow) or there already, or a
// refusal, of which three come with figures.
var joinCodes = []stock.Code{{Lua: "JOINED", Value: joinedNow}, {Lua: "ENTRY", Value: 1}, {Lua: "NO_SALE", Value: -1, Err: stock.ErrNoSale},
	{Lua: "GROUP_SALE", Value: -2, Err: stock.ErrGroupSale}, {Lua: "NO_VARIANT", Value: -3, Err: stock.ErrNoVariant}, {Lua: "ENDED", Value: -4, Err: stock.ErrEnded},
	{Lua: "NOT_SOLD_OUT", Value: -5, Err: ErrNotSoldOut}, {Lua: "OVER_LIMIT", Value: joinOverLimit, Err: stock.ErrLimitExceeded},
	{Lua: "QUANTITY_OVER_LIMIT", Value: joinQuantityOverLimit, Err: stock.ErrQuantityOverLimit},
	{Lua: "OVER_VARIANT_LIMIT", Value: joinOverVariantLimit, Err: stock.ErrLimitExceeded}, {Lua: "NOT_ADMITTED", Value: -9, Err: errWaitlistNotAdmitted}}

// errWaitlistNotAdmitted is a join of the waitlist of a sale with a waiting room by a
// buyer without a ticket of its line: the line decides who gets a sale's units, those
// that come back included.
var errWaitlistNotAdmitted = &stock.DetailError{Err: stock.ErrNotAdmitted, Detail: "its waitlist takes only buyers who hold a ticket of its line"}

// The codes of joinCodes that Go tells apart.
const (
	joinedNow             = 0
	joinOverLimit         = -6
	joinQuantityOverLimit = -7
	joinOverVariantLimit  = -8
)

// readScript reads a buyer's entry, with its position while waiting (read.lua).
//
//go:embed read.lua
var readLua string
var readScript = stock.NewScript(readLua, nil)

// leaveScript takes a buyer off the waitlist: the entry goes (an order offered stays)
// (leave.lua).
//
//go:embed leave.lua
var leaveLua string
var leaveScript = stock.NewScript(leaveLua, leaveCodes)

// leaveCodes are leaveScript's answers: the entry gone, or none (ErrNoEntry).
var leaveCodes = []stock.Code{{Lua: "LEFT", Value: 1}, {Lua: "NO_ENTRY", Value: 0, Err: ErrNoEntry}}

// JoinWaitlist puts a buyer on the waitlist of a sale (a variant of it) for quantity
// units, and returns the entry and whether it is new (false: the entry the buyer had,
// unchanged). A buyer whose entry ended joins anew. ticket says whether the buyer
// holds a ticket of the sale's line: a sale with a waiting room takes no one else.
// Errors: ErrNoSale, ErrGroupSale, ErrNoVariant, ErrNotAdmitted, ErrEnded, ErrNotSoldOut
// (units are on sale), ErrLimitExceeded (the buyer's holding with quantity would pass
// the limit or the per-variant limit), ErrQuantityOverLimit, ErrNoWaitlist (a sale of
// several buckets).
func (s *Settler) JoinWaitlist(ctx context.Context, activityID int64, who buyer.ID, quantity int, v stock.Variant, now time.Time, ticket bool) (Entry, bool, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return Entry{}, false, err
	}
	if sale.K() > 1 {
		return Entry{}, false, ErrNoWaitlist
	}
	holds := "0"
	if ticket {
		holds = "1"
	}
	keys := []string{stock.SaleKey(sale), stock.UsersKey(sale), stock.WaitlistEntriesKey(sale), stock.WaitlistKey(sale, v)}
	res, err := stock.Reply(joinScript.Run(ctx, s.rdb, keys, who.Key(), quantity, v.Arg(), now.UnixMilli(),
		stock.WaitlistPrefix(sale), holds).Result())
	if err != nil {
		return Entry{}, false, fmt.Errorf("join waitlist: %w", err)
	}
	n, err := stock.Integer(res[0])
	if err != nil {
		return Entry{}, false, fmt.Errorf("join waitlist: %w", err)
	}
	c, err := stock.CodeOf(joinCodes, n)
	switch {
	case err != nil:
		return Entry{}, false, fmt.Errorf("join waitlist: %w", err)
	case c.Err == nil:
		e, err := parseEntry(activityID, who, res[1:])
		return e, n == joinedNow, err
	case n != joinOverLimit && n != joinQuantityOverLimit && n != joinOverVariantLimit:
		return Entry{}, false, c.Err
	}
	vals, err := stock.Integers(res[1:])
	switch {
	case err != nil:
		return Entry{}, false, fmt.Errorf("join waitlist: %w", err)
	case n == joinOverLimit && len(vals) == 2:
		return Entry{}, false, &stock.DetailError{Err: stock.ErrLimitExceeded, Detail: fmt.Sprintf("you hold %d of at most %d units", vals[0], vals[1])}
	case n == joinQuantityOverLimit && len(vals) == 1:
		return Entry{}, false, &stock.DetailError{Err: stock.ErrQuantityOverLimit, Detail: fmt.Sprintf("quantity must be between 1 and %d", vals[0])}
	case n == joinOverVariantLimit && len(vals) == 2:
		return Entry{}, false, &stock.DetailError{Err: stock.ErrLimitExceeded, Detail: fmt.Sprintf("you hold %d of at most %d units of this variant", vals[0], vals[1])}
	}
	return Entry{}, false, fmt.Errorf("join waitlist: unexpected reply %v", res)
}

// WaitlistEntry returns a buyer's entry on a sale's waitlist, or ErrNoEntry.
func (s *Settler) WaitlistEntry(ctx context.Context, activityID int64, who buyer.ID) (Entry, error) {
	sale := stock.One(activityID)
	res, err := readScript.Run(ctx, s.rdb, []string{stock.WaitlistEntriesKey(sale)}, who.Key(), stock.WaitlistPrefix(sale)).Slice()
	if err != nil {
		return Entry{}, fmt.Errorf("read waitlist entry: %w", err)
	}
	if len(res) == 0 {
		return Entry{}, ErrNoEntry
	}
	return parseEntry(activityID, who, res)
}

// LeaveWaitlist takes a buyer off a sale's waitlist; ErrNoEntry when they had no entry.
func (s *Settler) LeaveWaitlist(ctx context.Context, activityID int64, who buyer.ID) error {
	sale := stock.One(activityID)
	n, err := leaveScript.Run(ctx, s.rdb, []string{stock.WaitlistEntriesKey(sale)}, who.Key(), stock.WaitlistPrefix(sale)).Int64()
	if err != nil {
		return fmt.Errorf("leave waitlist: %w", err)
	}
	return stock.AnswerOf(leaveCodes, n)
}

// WaitlistLength returns how many entries of a sale's waitlist are waiting.
func (s *Settler) WaitlistLength(ctx context.Context, activityID int64, variants int) (int64, error) {
	sale := stock.One(activityID)
	cmds := make([]*redis.IntCmd, 0, max(1, variants))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if variants == 0 {
			cmds = append(cmds, p.ZCard(ctx, stock.WaitlistKey(sale, 0)))
		}
		for i := range variants {
			cmds = append(cmds, p.ZCard(ctx, stock.WaitlistKey(sale, stock.VariantAt(i))))
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
	pos, err3 := stock.Integer(vs[6])
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
		e.Variant = stock.VariantAt(i)
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
