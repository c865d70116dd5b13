package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The audit reads MySQL through the storage facts of the API contract only:
// activities(id, stock_total, per_user_limit) and
// orders(id, activity_id, buyer, quantity, status, group_id, variant); for a sale of
// variants activity_variants(activity_id, name, stock_total); for group-buy sales
// also activities(sold, per_user_participations) and sale_groups(id, size, members,
// status) (groups.go).

// saleRow is an activity as MySQL holds it.
type saleRow struct {
	ID           int64
	StockTotal   int64
	PerUserLimit int64
	// Variants are a sale of variants' stock_total by name (auditSale reads them).
	Variants map[string]int64
}

// storedOrder is an order as MySQL holds it.
type storedOrder struct {
	ID       string
	Buyer    string
	Quantity int64
	Status   string
	GroupID  string // "" for an order of a plain sale
	Variant  string // "" outside a sale of variants
}

// holds reports the statuses whose units are taken from stock and count against the
// per-user limit: an order of a group that has not filled yet (grouping) holds its
// units too. MySQL never holds queued orders today; counting them too is stricter.
func holds(status string) bool {
	return status == "queued" || status == "grouping" || status == "created" || status == "paid"
}

func loadSale(ctx context.Context, db *sql.DB, activityID int64) (saleRow, error) {
	s := saleRow{ID: activityID}
	err := db.QueryRowContext(ctx, "SELECT stock_total, per_user_limit FROM activities WHERE id = ?",
		activityID).Scan(&s.StockTotal, &s.PerUserLimit)
	if err != nil {
		return s, fmt.Errorf("load activity %d: %w", activityID, err)
	}
	return s, nil
}

// querier is a pool (*sql.DB) or one connection of it (*sql.Conn): the ratios' drain
// reads through a connection of its own, whose work it leaves out of the service's.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func loadOrders(ctx context.Context, db querier, activityID int64) ([]storedOrder, error) {
	rows, err := db.QueryContext(ctx,
		"SELECT id, buyer, quantity, status, COALESCE(group_id, ''), COALESCE(variant, '') FROM orders WHERE activity_id = ?",
		activityID)
	if err != nil {
		return nil, fmt.Errorf("load orders: %w", err)
	}
	defer rows.Close()
	var out []storedOrder
	for rows.Next() {
		var o storedOrder
		if err := rows.Scan(&o.ID, &o.Buyer, &o.Quantity, &o.Status, &o.GroupID, &o.Variant); err != nil {
			return nil, fmt.Errorf("load orders: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

func countOrders(ctx context.Context, db querier, activityID int64) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE activity_id = ?", activityID).Scan(&n)
	return n, err
}

// waitPersisted polls MySQL every poll until every order in want is stored for the
// activity, and returns the time of the poll that saw them all. It gives up at deadline
// (returning false), so an audit still runs and counts the missing orders as lost.
func waitPersisted(ctx context.Context, db querier, activityID int64, want map[string]bool,
	poll time.Duration, deadline time.Time) (time.Time, bool, error) {
	return pollUntil(ctx, &poll, deadline, func() (bool, error) {
		n, err := countOrders(ctx, db, activityID)
		if err != nil || n < len(want) {
			return false, err
		}
		stored, err := loadOrders(ctx, db, activityID)
		if err != nil {
			return false, err
		}
		missing := len(want)
		for _, o := range stored {
			if want[o.ID] {
				missing--
			}
		}
		poll = max(poll, 250*time.Millisecond) // full reads from here on: go slower
		return missing == 0, nil
	})
}

// pollUntil runs check every *poll (check may change it) until check reports done,
// and returns the time the run that did began. It gives up (false) after the first run
// that began past deadline.
func pollUntil(ctx context.Context, poll *time.Duration, deadline time.Time, check func() (bool, error)) (time.Time, bool, error) {
	for {
		seen := time.Now()
		done, err := check()
		switch {
		case err != nil:
			return time.Time{}, false, err
		case done:
			return seen, true, nil
		case seen.After(deadline):
			return seen, false, nil
		}
		select {
		case <-ctx.Done():
			return seen, false, ctx.Err()
		case <-time.After(*poll):
		}
	}
}

// ack is an order the API named in a 202 or a 200 answer, with what the buyer (its
// subject) asked.
type ack struct {
	Buyer    string
	Quantity int64
	Key      string // Idempotency-Key, "" for none
	Group    string // the seat's group in a group-buy sale, "" for a purchase
	Variant  string // the variant named in a sale of variants, "" outside one
}

// ledger is what the API told the crowd about one sale. It is safe for concurrent use.
type ledger struct {
	mu sync.Mutex
	// accepted holds the orders of 202 answers.
	accepted map[string]ack
	// replayed holds the orders named by 200 answers (replays of an Idempotency-Key).
	replayed map[string]ack
	// keys maps "buyer/key" to the orders its answers named.
	keys map[string]map[string]bool
	// repeated counts 202 answers that named an order an earlier 202 had named.
	repeated int
	// unanswered counts purchases whose outcome the crowd cannot know: no answer, and
	// no Idempotency-Key to ask again with.
	unanswered int
}

func newLedger() *ledger {
	return &ledger{accepted: map[string]ack{}, replayed: map[string]ack{}, keys: map[string]map[string]bool{}}
}

// record notes a 202 (accepted) or 200 (replayed) answer naming order id.
func (l *ledger) record(id string, a ack, accepted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if accepted {
		if _, dup := l.accepted[id]; dup {
			l.repeated++
		} else {
			l.accepted[id] = a
		}
	} else if _, ok := l.replayed[id]; !ok {
		l.replayed[id] = a
	}
	if a.Key != "" {
		k := a.Buyer + "/" + a.Key
		if l.keys[k] == nil {
			l.keys[k] = map[string]bool{}
		}
		l.keys[k][id] = true
	}
}

func (l *ledger) noteUnanswered() {
	l.mu.Lock()
	l.unanswered++
	l.mu.Unlock()
}

// acknowledged returns every order an answer named.
func (l *ledger) acknowledged() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]bool, len(l.accepted)+len(l.replayed))
	for id := range l.accepted {
		out[id] = true
	}
	for id := range l.replayed {
		out[id] = true
	}
	return out
}

// report is the audit of one sale.
type report struct {
	Sale      saleRow
	Orders    int
	ByStatus  map[string]int
	HeldUnits int64 // units in queued, grouping, created and paid orders
	Accepted  int   // 202 answers
	// Oversold is how many units more than stock_total the orders hold (0 when fine).
	Oversold int64
	// VariantsOversold maps the variants of a sale of variants whose orders hold more
	// than their stock_total to the units too many; VariantHeld is each variant's units
	// held.
	VariantsOversold map[string]int64
	VariantHeld      map[string]int64
	// Lost are orders an answer named that MySQL does not have.
	Lost []string
	// Phantom are orders in MySQL that no 202 or 200 answer named.
	Phantom []string
	// KeyDuplicates are "buyer/key" whose answers named more than one order.
	KeyDuplicates []string
	// Repeated counts 202 answers that named an already accepted order.
	Repeated int
	// Refused are orders an answer named that MySQL stored as failed: Redis took their
	// units, and MySQL's guards turned them down (only a Redis that lost writes does that).
	Refused []string
	// Mismatched are orders whose buyer, quantity or group in MySQL is not what the
	// buyer asked and the answer said.
	Mismatched []string
	// OverLimit maps buyers past per_user_limit to the units they hold.
	OverLimit map[string]int64
	// Unanswered counts purchases with no answer and no key to ask again with.
	Unanswered int
}

// Duplicated counts orders that should not exist: phantom orders, keys that made more
// than one order, and 202 answers that repeated an order.
func (r report) Duplicated() int { return len(r.Phantom) + len(r.KeyDuplicates) + r.Repeated }

// Inconclusive reports phantom orders that purchases without an answer may explain.
func (r report) Inconclusive() bool { return r.Unanswered > 0 && len(r.Phantom) > 0 }

// OK reports whether nothing was oversold, lost, refused, duplicated, mismatched or over
// a limit, and every purchase got an answer.
func (r report) OK() bool {
	return r.Oversold == 0 && len(r.VariantsOversold) == 0 && len(r.Lost) == 0 && len(r.Refused) == 0 && r.Duplicated() == 0 &&
		len(r.Mismatched) == 0 && len(r.OverLimit) == 0 && r.Unanswered == 0
}

// auditSale loads the sale and its orders from MySQL and audits them against l.
func auditSale(ctx context.Context, db *sql.DB, activityID int64, l *ledger) (report, error) {
	s, err := loadSale(ctx, db, activityID)
	if err != nil {
		return report{}, err
	}
	stored, err := loadOrders(ctx, db, activityID)
	if err != nil {
		return report{}, err
	}
	if s.Variants, err = loadVariants(ctx, db, activityID); err != nil {
		return report{}, err
	}
	return audit(s, stored, l), nil
}

// loadVariants reads a sale of variants' stock_total by variant name (none for a sale
// without variants).
func loadVariants(ctx context.Context, db *sql.DB, activityID int64) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT name, stock_total FROM activity_variants WHERE activity_id = ?", activityID)
	if err != nil {
		return nil, fmt.Errorf("load variants: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var total int64
		if err := rows.Scan(&name, &total); err != nil {
			return nil, fmt.Errorf("load variants: %w", err)
		}
		out[name] = total
	}
	return out, rows.Err()
}

// audit compares MySQL's sale and orders with what the API answered.
func audit(s saleRow, stored []storedOrder, l *ledger) report {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := report{Sale: s, Orders: len(stored), ByStatus: map[string]int{}, Accepted: len(l.accepted),
		Repeated: l.repeated, OverLimit: map[string]int64{}, Unanswered: l.unanswered,
		VariantsOversold: map[string]int64{}, VariantHeld: map[string]int64{}}
	byID := make(map[string]storedOrder, len(stored))
	perUser := map[string]int64{}
	for _, o := range stored {
		byID[o.ID] = o
		r.ByStatus[o.Status]++
		if holds(o.Status) {
			r.HeldUnits += o.Quantity
			perUser[o.Buyer] += o.Quantity
			if o.Variant != "" {
				r.VariantHeld[o.Variant] += o.Quantity
			}
		}
		_, accepted := l.accepted[o.ID]
		_, replayed := l.replayed[o.ID]
		if !accepted && !replayed {
			r.Phantom = append(r.Phantom, o.ID)
		}
	}
	r.Oversold = max(0, r.HeldUnits-s.StockTotal)
	for v, held := range r.VariantHeld {
		if total, ok := s.Variants[v]; !ok || held > total {
			r.VariantsOversold[v] = held - total
		}
	}
	for u, units := range perUser {
		if units > s.PerUserLimit {
			r.OverLimit[u] = units
		}
	}
	check := func(acks map[string]ack) {
		for id, a := range acks {
			o, ok := byID[id]
			switch {
			case !ok:
				if !slices.Contains(r.Lost, id) {
					r.Lost = append(r.Lost, id)
				}
			case o.Status == "failed":
				if !slices.Contains(r.Refused, id) {
					r.Refused = append(r.Refused, id)
				}
			case o.Buyer != a.Buyer || o.Quantity != a.Quantity || o.GroupID != a.Group || o.Variant != a.Variant:
				if !slices.Contains(r.Mismatched, id) {
					r.Mismatched = append(r.Mismatched, id)
				}
			}
		}
	}
	check(l.accepted)
	check(l.replayed)
	for k, ids := range l.keys {
		if len(ids) > 1 {
			r.KeyDuplicates = append(r.KeyDuplicates, k)
		}
	}
	sort.Strings(r.Lost)
	sort.Strings(r.Refused)
	sort.Strings(r.Phantom)
	sort.Strings(r.KeyDuplicates)
	sort.Strings(r.Mismatched)
	return r
}

// print writes the audit, one figure a line, with a few examples of each problem.
func (r report) print(w io.Writer) {
	fmt.Fprintf(w, "  MySQL: %d orders (%s); units held %d of stock_total %d; 202 answers %d\n",
		r.Orders, byStatus(r.ByStatus), r.HeldUnits, r.Sale.StockTotal, r.Accepted)
	line := func(name string, n int, detail string) {
		fmt.Fprintf(w, "  %-12s %d%s\n", name, n, detail)
	}
	line("oversold", int(r.Oversold), " (units in grouping+created+paid orders beyond stock_total)")
	if len(r.Sale.Variants) > 0 {
		names := make([]string, 0, len(r.Sale.Variants))
		for v := range r.Sale.Variants {
			names = append(names, v)
		}
		sort.Strings(names)
		held := make([]string, len(names))
		for i, v := range names {
			held[i] = fmt.Sprintf("%s %d/%d", v, r.VariantHeld[v], r.Sale.Variants[v])
		}
		fmt.Fprintf(w, "  %-12s %s\n", "by variant", strings.Join(held, ", "))
		over := make([]string, 0, len(r.VariantsOversold))
		for v, n := range r.VariantsOversold {
			over = append(over, fmt.Sprintf("%s by %d", v, n))
		}
		sort.Strings(over)
		line("var. oversold", len(r.VariantsOversold), " (variants whose orders hold more than their stock_total)"+examples(over))
	}
	line("lost", len(r.Lost), examples(r.Lost))
	line("refused", len(r.Refused), " (acknowledged, then stored as failed by MySQL's guards)"+examples(r.Refused))
	line("duplicated", r.Duplicated(), fmt.Sprintf(" (in MySQL without a 202/200: %d%s; keys with 2+ orders: %d%s; repeated 202s: %d)",
		len(r.Phantom), examples(r.Phantom), len(r.KeyDuplicates), examples(r.KeyDuplicates), r.Repeated))
	users := make([]string, 0, len(r.OverLimit))
	for u, n := range r.OverLimit {
		users = append(users, fmt.Sprintf("buyer %q holds %d", u, n))
	}
	sort.Strings(users)
	line("over limit", len(r.OverLimit), examples(users))
	line("mismatched", len(r.Mismatched), examples(r.Mismatched))
	line("unanswered", r.Unanswered, " (purchases with neither an answer nor a key to ask again)")
	if r.Inconclusive() {
		fmt.Fprintln(w, "  inconclusive: purchases without an answer may have made the orders MySQL has without one")
	}
}

// byStatus lists counts by status in the order of the names: "created 3, paid 1".
func byStatus(counts map[string]int) string {
	out := make([]string, 0, len(counts))
	for s, n := range counts {
		out = append(out, fmt.Sprintf("%s %d", s, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func examples(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return " e.g. " + strings.Join(s[:min(len(s), 3)], ", ")
}
