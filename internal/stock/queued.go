package stock

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"seckill/internal/buyer"
)

// An order's way through stock, in this file: what the buyer asks for (Purchase) and
// what a replay must match of it (Fingerprint), the queued record (QueuedOrder) with
// its value and its task's line, and their coders in Go (in Lua: queued.lua). The
// reserve script's arguments of it are reserve's orderArgs, the row MySQL stores of it
// store.RowOf. A field the buyer sends with an order goes along that way.
// Purchase is what a buyer asks for: units of a sale, or a seat in one of its groups.
type Purchase struct {
	ActivityID int64
	Buyer      buyer.ID
	Quantity   int
	// IdempotencyKey is the client's key, "" for none.
	IdempotencyKey string
	// Group is, in a group-buy sale, the group the seat is in: a new one when
	// OpenGroup, else one to join. "" for a plain purchase.
	Group     string
	OpenGroup bool
	// PassExpires is when the buyer's pass for this sale expires (a waiting-room
	// sale); zero for none. The caller has verified the pass.
	PassExpires time.Time
	// Variant is the variant bought in a sale of variants (its index: VariantAt), the
	// zero Variant for none.
	Variant Variant
	// AccessCode is the access code the buyer presents (X-Access-Code), "" for none: it
	// counts before the start only (early access: code.lua). Not part of Fingerprint: a
	// replay is the same purchase, with any code or none.
	AccessCode string
}

// Variant is one of a sale's variants by its index plus one, so that the zero Variant is
// none (a sale without variants). Redis, the queued value and MySQL's variant_index keep
// the index itself (Index).
type Variant int

// VariantAt is the variant of index i (0 up).
func VariantAt(i int) Variant { return Variant(i + 1) }

// Index is the variant's index, and false for none.
func (v Variant) Index() (int, bool) { return int(v) - 1, v > 0 }

// Arg is the variant as the scripts take it: its index, "" for none.
func (v Variant) Arg() string {
	if i, ok := v.Index(); ok {
		return strconv.Itoa(i)
	}
	return ""
}

// Fingerprint is what an Idempotency-Key remembers of the request that used it (the
// quantity, the variant, and a seat's group), "" without a key: a replay must match it.
func (p Purchase) Fingerprint() string {
	if p.IdempotencyKey == "" {
		return ""
	}
	fingerprint := "q" + strconv.Itoa(p.Quantity)
	if i, ok := p.Variant.Index(); ok {
		fingerprint += ":v" + strconv.Itoa(i)
	}
	if m := p.Mode(); m == "join" {
		fingerprint += ":join:" + p.Group
	} else if m == "open" {
		fingerprint += ":open"
	}
	return fingerprint
}

// QueuedOrder is an order taken from stock that MySQL does not have yet: the one record
// of it from the reserve script to the worker's insert. The sale's queued hash holds it
// under its id (its value, below), and a task of internal/task carries it to the worker
// as a line (AppendLine).
type QueuedOrder struct {
	OrderID    string
	ActivityID int64
	Buyer      buyer.ID
	Quantity   int
	CreatedAt  time.Time
	// Limit is the per-user limit the reservation was checked against.
	Limit int
	// ParticipationCap is the cap on a buyer's orders it was checked against (0: none).
	ParticipationCap int
	// Group, GroupSize and GroupExpiresAt are the seat's group ("" for a purchase).
	Group          string
	GroupSize      int
	GroupExpiresAt time.Time
	// AmountCents and ExpiresAt are the order's amount and the end of its pay window as
	// set, from its sale's price and pay window (Priced): the queued hash leaves them to
	// the sale's hash.
	AmountCents int64
	ExpiresAt   time.Time
	// IdempotencyKey is the buyer's key that made the order and Fingerprint what it
	// remembers of the request (Reservation.Fingerprint), "" without one: a task carries
	// them, and MySQL keeps them for a rebuild; the queued hash leaves them to the key's
	// own record.
	IdempotencyKey string
	Fingerprint    string
	// Variant is the variant bought (none outside a sale of variants).
	Variant Variant
	// Offered is true for an order the waitlist made of units that came back
	// (waitlist.go), not a purchase.
	Offered bool
	// EarlyAccess is true for an order bought in the sale's early window, with an
	// access code (never an offered one).
	EarlyAccess bool
	// Claimed is true once a worker has begun to persist the order (Stale only).
	Claimed bool
}

// Priced is q at its sale's unit price and pay window: its amount, and the end of its
// pay window as set (the window starts over once MySQL has the order). The one place
// they are worked out.
func (q QueuedOrder) Priced(sale Sale) QueuedOrder {
	q.AmountCents = sale.PriceCents * int64(q.Quantity)
	q.ExpiresAt = q.CreatedAt.Add(sale.PayWindow)
	return q
}

// A queued order is the value of its id in the queued hash: "buyer quantity created
// limit", buyer the buyer's key (buyer.ID.Key: a decimal buyer's is its user id),
// created in unix ms and limit the per-user limit it was checked against, and,
// in a sale that caps participations or sells in groups, " cap group size expires":
// the cap it was checked against (0: none), and its group's id, size and end (unix ms),
// "- 0 0" outside a group; in a sale of variants the long form ends with " variant", the
// variant's index (a group-buy sale has none); an order the waitlist offered ends with
// " <variant or -> o", an order of the early window with " <variant or -> e" (a seat's
// too, after its group). Go and Lua each have one encoder and one decoder of it, side
// by side here; TestQueuedValueOneFormat holds the two languages to it. A line
// (AppendLine) ends with the same value, so a field added at the value's end reaches
// the queue's tasks with no change of the line. Fields are split on single spaces, as
// Lua's patterns read them (strings.Fields would split on Unicode spaces too, which a
// buyer's key may hold).
// QueuedValue is q's value in the queued hash.
func QueuedValue(q QueuedOrder) string { return string(appendValue(make([]byte, 0, 64), q)) }

// appendValue appends q's value to b.
func appendValue(b []byte, q QueuedOrder) []byte {
	b = append(b, q.Buyer.Key()...)
	b = strconv.AppendInt(append(b, ' '), int64(q.Quantity), 10)
	b = strconv.AppendInt(append(b, ' '), q.CreatedAt.UnixMilli(), 10)
	b = strconv.AppendInt(append(b, ' '), int64(q.Limit), 10)
	variant, ok := q.Variant.Index()
	switch {
	case q.Group != "":
		b = strconv.AppendInt(append(b, ' '), int64(q.ParticipationCap), 10)
		b = append(append(append(b, ' '), q.Group...), ' ')
		b = strconv.AppendInt(b, int64(q.GroupSize), 10)
		b = strconv.AppendInt(append(b, ' '), q.GroupExpiresAt.UnixMilli(), 10)
	case q.ParticipationCap > 0 || ok || q.Offered || q.EarlyAccess:
		b = strconv.AppendInt(append(b, ' '), int64(q.ParticipationCap), 10)
		b = append(b, " - 0 0"...)
	}
	switch {
	case ok:
		b = strconv.AppendInt(append(b, ' '), int64(variant), 10)
	case q.Offered || q.EarlyAccess:
		b = append(b, " -"...)
	}
	switch {
	case q.Offered:
		b = append(b, " o"...)
	case q.EarlyAccess:
		b = append(b, " e"...)
	}
	return b
}

// ParseQueued reads the value v of order orderID of a sale's queued hash.
func ParseQueued(activityID int64, orderID, v string) (QueuedOrder, error) {
	q := QueuedOrder{OrderID: orderID, ActivityID: activityID}
	if !parseValue(strings.Split(v, " "), &q) {
		return QueuedOrder{}, fmt.Errorf("queued order %s: malformed %q", orderID, v)
	}
	return q, nil
}

// parseValue reads the fields of a value (four, eight, nine with a variant, ten for an
// offered order or one of the early window) into q, and reports whether they are one.
func parseValue(f []string, q *QueuedOrder) bool {
	if len(f) != 4 && len(f) != 8 && len(f) != 9 && len(f) != 10 {
		return false
	}
	if len(f) == 10 {
		switch f[9] {
		case "o":
			q.Offered = true
		case "e":
			q.EarlyAccess = true
		default:
			return false
		}
		if f[8] == "-" {
			f = f[:8]
		} else {
			f = f[:9]
		}
	}
	who, err := buyer.FromKey(f[0])
	if err != nil {
		return false
	}
	var n [9]int64
	for i := 1; i < len(f); i++ {
		if i == 5 {
			continue // the group id
		}
		var err error
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return false
		}
	}
	q.Buyer, q.Quantity, q.CreatedAt = who, int(n[1]), time.UnixMilli(n[2]).UTC()
	q.Limit, q.ParticipationCap = int(n[3]), int(n[4])
	if len(f) >= 8 && f[5] != "-" {
		q.Group, q.GroupSize, q.GroupExpiresAt = f[5], int(n[6]), time.UnixMilli(n[7]).UTC()
	}
	if len(f) == 9 {
		if n[8] < 0 || n[8] >= MaxVariants {
			return false
		}
		q.Variant = VariantAt(int(n[8]))
	}
	return true
}

// noKey stands in a line for the Idempotency-Key and the fingerprint of an order made
// without a key: no key holds a dot.
const noKey = "."

// AppendLine appends q as one line of text, without its end: "id activity amount
// expires key fingerprint" (cents; the end of its pay window as set, unix ms; key and
// fingerprint noKey without an Idempotency-Key, and neither holds a space), then its
// value as the queued hash holds it. It is readable in queue tools, and cheap to write
// and read for every order.
func (q QueuedOrder) AppendLine(b []byte) []byte {
	key, fingerprint := q.IdempotencyKey, q.Fingerprint
	if key == "" {
		key, fingerprint = noKey, noKey
	}
	b = append(b, q.OrderID...)
	b = strconv.AppendInt(append(b, ' '), q.ActivityID, 10)
	b = strconv.AppendInt(append(b, ' '), q.AmountCents, 10)
	b = strconv.AppendInt(append(b, ' '), q.ExpiresAt.UnixMilli(), 10)
	b = append(append(append(append(b, ' '), key...), ' '), fingerprint...)
	return appendValue(append(b, ' '), q)
}

// ParseLine reads a line AppendLine wrote. An order of no sale, quantity or limit is
// refused as incomplete, one whose buyer is no buyer's key as malformed.
func ParseLine(line []byte) (QueuedOrder, error) {
	f := strings.Split(string(line), " ")
	var q QueuedOrder
	if len(f) < 6 || !parseValue(f[6:], &q) {
		return QueuedOrder{}, fmt.Errorf("queued order: malformed line %q", line)
	}
	var n [3]int64
	for i := range n {
		var err error
		if n[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return QueuedOrder{}, fmt.Errorf("queued order: malformed line %q", line)
		}
	}
	q.OrderID, q.ActivityID, q.AmountCents, q.ExpiresAt = f[0], n[0], n[1], time.UnixMilli(n[2]).UTC()
	if f[4] != noKey {
		q.IdempotencyKey, q.Fingerprint = f[4], f[5]
	}
	if q.ActivityID <= 0 || q.Quantity <= 0 || q.Limit <= 0 {
		return QueuedOrder{}, fmt.Errorf("queued order: incomplete line %q", line)
	}
	return q, nil
}

// Mode is the reserve script's mode of p: "" a purchase, "open" or "join" a seat (also
// before the group's id is minted: OpenGroup alone says "open").
func (p Purchase) Mode() string {
	switch {
	case p.OpenGroup:
		return "open"
	case p.Group == "":
		return ""
	}
	return "join"
}
