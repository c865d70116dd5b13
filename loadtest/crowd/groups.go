package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// groupConfig is the group-buy phase of the ratios run: buyers open groups of a
// group-buy sale and take seats in the groups others opened, measured as seats taken
// (202s) per second.
type groupConfig struct {
	Size    int           // seats of a group (group_size); 0 leaves the phase out
	Window  time.Duration // group_window_seconds: long enough that no group closes during the run
	Seats   int           // seats each user takes, each in another group: the per-user limit and the cap on participations
	Open    float64       // share of seats that open a group although the buyer's list shows one to join
	Refresh time.Duration // age at which a buyer fetches the list of open groups again
	Buyers  int           // users signed for the phase; it ends early when they run out
	// FirstUser is the first user id of the phase; the users that fill the groups left
	// open come after its Buyers.
	FirstUser int64
}

// userTurns is how many users one virtual buyer takes turns with. A user's next seat
// waits for the other users' requests, as a person's would wait a moment: sent at once
// it would find the user's lock of its last seat still held (the API releases locks
// after the answer, in batches) and wait for it.
const userTurns = 3

// relist is how old a buyer's list of open groups may be, when it shows no group to
// join, before the buyer fetches it again; meanwhile its users open groups.
const relist = 50 * time.Millisecond

// groupView is a group as the API shows it.
type groupView struct {
	ID         string    `json:"id"`
	ActivityID int64     `json:"activity_id"`
	Size       int       `json:"size"`
	Members    int       `json:"members"`
	Status     string    `json:"status"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// seatAnswer is the body of a 202 to an open or a join.
type seatAnswer struct {
	Group groupView `json:"group"`
	Order order     `json:"order"`
}

// openGroup opens a group of the sale with the caller's first seat, of quantity units.
func (a *api) openGroup(ctx context.Context, activityID int64, token string, quantity int) answer {
	r := a.do(ctx, http.MethodPost, fmt.Sprintf("/api/v1/activities/%d/groups", activityID),
		token, "", fmt.Appendf(nil, `{"quantity":%d}`, quantity))
	r.kind = "open"
	return r
}

// joinGroup takes a seat of quantity units in the group.
func (a *api) joinGroup(ctx context.Context, groupID, token string, quantity int) answer {
	r := a.do(ctx, http.MethodPost, "/api/v1/groups/"+groupID+"/join", token, "",
		fmt.Appendf(nil, `{"quantity":%d}`, quantity))
	r.kind = "join"
	return r
}

// openGroups asks for the sale's open groups; the answer's groups are in its body.
func (a *api) openGroups(ctx context.Context, activityID int64) (answer, []groupView) {
	r := a.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/activities/%d/groups", activityID), "", "", nil)
	r.kind = "list"
	if r.status != http.StatusOK {
		return r, nil
	}
	var got struct {
		Groups []groupView `json:"groups"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		r.code = "unreadable"
		return r, nil
	}
	return r, got.Groups
}

// expectedSeatAnswers are the answers a correct API gives the group phase's buyers. A
// join may find its group full (the buyer's list is up to Refresh old); a user's seat
// may meet the lock of its previous one (busy).
var expectedSeatAnswers = map[string]bool{"list 200": true, "open 202": true, "join 202": true,
	"join 409 group_full": true, "open 429 busy": true, "join 429 busy": true}

// seatUser is one user of the group phase.
type seatUser struct {
	id     int64  // its number
	buyer  string // its subject (api.subject)
	token  string
	seats  int             // seats taken
	groups map[string]bool // groups the user holds a seat in
}

// groupPhase is what the buyers of the group phase share.
type groupPhase struct {
	api    *api
	cfg    groupConfig
	sale   int64
	tokens []string
	next   atomic.Int64 // index of the next user in tokens
	ledger *ledger

	mu              sync.Mutex // guards contradictions and nContradictions
	contradictions  []string   // examples of 202 answers that contradict themselves or the request
	nContradictions int
	lists           atomic.Int64 // list answers
	listed          atomic.Int64 // groups in them
}

// newUser returns the phase's next user, nil when they ran out.
func (p *groupPhase) newUser() *seatUser {
	i := int(p.next.Add(1) - 1)
	if i >= len(p.tokens) {
		return nil
	}
	n := p.cfg.FirstUser + int64(i)
	return &seatUser{id: n, buyer: p.api.subject(n), token: p.tokens[i], groups: map[string]bool{}}
}

// seated checks a 202 to user u's seat (in group, "" for an open) and records it in
// the ledger. It returns the group as the answer shows it.
func (p *groupPhase) seated(r answer, u *seatUser, group string) groupView {
	var a seatAnswer
	err := json.Unmarshal(r.body, &a)
	var wrong string
	switch {
	case err != nil || a.Order.ID == "" || a.Group.ID == "":
		wrong = "no order or no group"
	case group != "" && a.Group.ID != group:
		wrong = "a seat in another group than asked"
	case a.Order.GroupID != a.Group.ID:
		wrong = "an order of another group"
	case a.Group.Size != p.cfg.Size:
		wrong = fmt.Sprintf("a group of %d seats", a.Group.Size)
	case a.Group.Members < 1 || a.Group.Members > a.Group.Size:
		wrong = fmt.Sprintf("a group of %d members", a.Group.Members)
	case a.Order.Buyer != u.buyer || a.Order.Quantity != 1:
		wrong = fmt.Sprintf("an order of buyer %q for %d units", a.Order.Buyer, a.Order.Quantity)
	}
	if wrong != "" {
		p.mu.Lock()
		p.nContradictions++
		if len(p.contradictions) < 3 {
			p.contradictions = append(p.contradictions, fmt.Sprintf("%s: %.200s", wrong, r.body))
		}
		p.mu.Unlock()
	}
	if a.Order.ID == "" {
		p.ledger.noteUnanswered() // a 202 that names no order tells nothing
		return a.Group
	}
	p.ledger.record(a.Order.ID, ack{Buyer: u.buyer, Quantity: 1, Group: a.Group.ID}, true)
	return a.Group
}

// seatBuyer is one virtual buyer of the group phase: it takes turns among userTurns
// users, keeps the list of open groups it fetched last, and sends one request a step.
type seatBuyer struct {
	p       *groupPhase
	rng     *rand.Rand
	users   [userTurns]*seatUser
	turn    int
	list    []groupView // fullest first, as the API sent it, less the groups found full since
	fetched time.Time
	kinds   map[string]*tally // the answers by kind of request
}

func newSeatBuyer(p *groupPhase, seed uint64) *seatBuyer {
	return &seatBuyer{p: p, rng: rand.New(rand.NewPCG(seed, 7)), kinds: map[string]*tally{}}
}

// user returns the user whose turn it is, a new one in place of a user who took all
// their seats; nil when the phase's users ran out.
func (b *seatBuyer) user() *seatUser {
	u := b.users[b.turn]
	if u == nil || u.seats >= b.p.cfg.Seats {
		u = b.p.newUser()
		b.users[b.turn] = u
	}
	return u
}

// candidates are the groups of the buyer's list that u may join: not full as far as
// the buyer knows, and without a seat of u's.
func candidates(list []groupView, u *seatUser) []groupView {
	var out []groupView
	for _, g := range list {
		if g.Members < g.Size && !u.groups[g.ID] {
			out = append(out, g)
		}
	}
	return out
}

// forget drops a group from the buyer's list.
func (b *seatBuyer) forget(id string) {
	b.list = slices.DeleteFunc(b.list, func(g groupView) bool { return g.ID == id })
}

// seen updates a group of the buyer's list with what an answer showed of it.
func (b *seatBuyer) seen(g groupView) {
	for i := range b.list {
		if b.list[i].ID == g.ID {
			b.list[i].Members = g.Members
		}
	}
}

// step sends the buyer's next request at now: the list of open groups when the
// buyer's is Refresh old (or relist old and shows nothing to join), else the user
// whose turn it is joins a group of the list, at random among those it may join, or
// opens a group when there is none or with probability Open. A join that meets a 409
// drops the group and has the list fetched at the next step. It returns false when
// the users ran out.
func (b *seatBuyer) step(ctx context.Context, now time.Time) (answer, bool) {
	u := b.user()
	if u == nil {
		return answer{}, false
	}
	cfg := b.p.cfg
	can := candidates(b.list, u)
	age := now.Sub(b.fetched)
	var r answer
	switch {
	case age >= cfg.Refresh || len(can) == 0 && age >= relist:
		var list []groupView
		r, list = b.p.api.openGroups(ctx, b.p.sale)
		if r.status == http.StatusOK {
			b.list, b.fetched = list, now
			b.p.lists.Add(1)
			b.p.listed.Add(int64(len(list)))
		}
	case len(can) == 0 || b.rng.Float64() < cfg.Open:
		r = b.p.api.openGroup(ctx, b.p.sale, u.token, 1)
		if r.status == http.StatusAccepted {
			if g := b.p.seated(r, u, ""); g.ID != "" {
				u.seats++
				u.groups[g.ID] = true
			}
		}
		b.turn = (b.turn + 1) % userTurns
	default:
		g := can[b.rng.IntN(len(can))]
		r = b.p.api.joinGroup(ctx, g.ID, u.token, 1)
		switch {
		case r.status == http.StatusAccepted:
			if got := b.p.seated(r, u, g.ID); got.ID != "" {
				u.seats++
				u.groups[g.ID] = true
				b.seen(got)
			}
		case r.status == http.StatusConflict: // full, closed, or a seat of u's: the list is stale
			b.forget(g.ID)
			b.fetched = time.Time{} // fetched again at the next step, as an app reloads after an error
		}
		b.turn = (b.turn + 1) % userTurns
	}
	t := b.kinds[r.kind]
	if t == nil {
		t = newTally()
		b.kinds[r.kind] = t
	}
	t.add(r)
	return r, true
}

// groupResult is what the group phase measured.
type groupResult struct {
	seatRate float64 // 202s (seats taken) per second of the phase
	ok       bool    // the audit passed and every answer was one a correct API gives
}

// runGroups is the group phase: it creates a group-buy sale with plentiful stock, lets
// cfg.Conns buyers open groups and join them for cfg.Phase (through run, which prints
// the phase and its CPU), then fills every group left open with new users, waits for
// MySQL to hold every seat and every group to be complete, and audits the sale.
func runGroups(ctx context.Context, w io.Writer, a *api, db *sql.DB, cfg ratiosConfig,
	run func(name string, d time.Duration, fn func(ctx context.Context, worker int) (answer, bool)) phase) (groupResult, error) {
	gc := cfg.Group
	id, err := a.create(ctx, saleSpec{Name: "ratios group seats", Stock: 1_000_000_000, PerUserLimit: gc.Seats,
		Kind: "group", GroupSize: gc.Size, GroupWindowSeconds: int(gc.Window / time.Second),
		PerUserParticipations: gc.Seats})
	if err != nil {
		return groupResult{}, err
	}
	tokens, err := a.tokens(gc.FirstUser, gc.Buyers)
	if err != nil {
		return groupResult{}, err
	}
	p := &groupPhase{api: a, cfg: gc, sale: id, tokens: tokens, ledger: newLedger()}
	buyers := make([]*seatBuyer, cfg.Conns)
	for i := range buyers {
		buyers[i] = newSeatBuyer(p, uint64(i))
	}
	ph := run("group seats", cfg.Phase, func(ctx context.Context, wk int) (answer, bool) {
		return buyers[wk].step(ctx, time.Now())
	})
	phaseEnd := time.Now()
	if int(p.next.Load()) >= len(tokens) && ph.elapsed < cfg.Phase {
		fmt.Fprintf(w, "  (the group phase ran out of its %d buyers; raise -group-buyers)\n", len(tokens))
	}
	res := groupResult{seatRate: p.summarize(w, ph, buyers)}
	unexpected := unexpectedSeatAnswers(ph.tally)

	// Fill the groups left open, so that every group must end complete in MySQL.
	fillStart := time.Now()
	f, err := p.fill(ctx, cfg.Conns, fillStart.Add(cfg.Drain), gc.FirstUser+int64(gc.Buyers))
	if err != nil {
		return res, err
	}
	fillEnd := time.Now()
	fmt.Fprintf(w, "  %-16s %d groups left open filled by %d new users in %.2fs [%s]\n", "group fill", f.groups, f.seats,
		fillEnd.Sub(fillStart).Seconds(), f.answers.breakdown())
	unexpected += unexpectedSeatAnswers(f.answers)

	want := p.ledger.acknowledged()
	stored, all, err := waitPersisted(ctx, db, id, want, 20*time.Millisecond, fillEnd.Add(cfg.Drain))
	if err != nil {
		return res, err
	}
	settled, none, err := waitUngrouped(ctx, db, id, 20*time.Millisecond, fillEnd.Add(cfg.Drain))
	if err != nil {
		return res, err
	}
	fmt.Fprintf(w, "  %-16s %d seats; MySQL held all of them %s and no order was grouping %s (after the phase)\n",
		"group drain", len(want), after(all, stored, phaseEnd), after(none, settled, phaseEnd))

	ok, err := p.audit(ctx, w, db)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(w, "  %-16s contradicting 202s %d%s, unexpected answers %d\n", "", p.nContradictions,
		examples(p.contradictions), unexpected)
	res.ok = ok && p.nContradictions == 0 && unexpected == 0
	return res, nil
}

// summarize prints the seats the phase took and each kind of request's latency, and
// returns the seats taken per second.
func (p *groupPhase) summarize(w io.Writer, ph phase, buyers []*seatBuyer) float64 {
	kinds := map[string]*tally{}
	for _, b := range buyers {
		for k, t := range b.kinds {
			if kinds[k] == nil {
				kinds[k] = newTally()
			}
			kinds[k].merge(t)
		}
	}
	opens, joins := ph.tally.counts["open 202"], ph.tally.counts["join 202"]
	rate := float64(opens+joins) / ph.elapsed.Seconds()
	fmt.Fprintf(w, "  %-16s %d seats taken in %.2fs = %.0f/s: %d joins (%.0f%%), %d opens\n", "",
		opens+joins, ph.elapsed.Seconds(), rate, joins, 100*float64(joins)/float64(max(opens+joins, 1)), opens)
	var lat []string
	for _, k := range []string{"open", "join", "list"} {
		if t := kinds[k]; t != nil {
			p50, p99, _ := t.percentiles()
			lat = append(lat, fmt.Sprintf("%s p50 %s p99 %s", k, ms(p50), ms(p99)))
		}
	}
	fmt.Fprintf(w, "  %-16s %s; %.1f groups in a list on average\n", "", strings.Join(lat, ", "),
		float64(p.listed.Load())/float64(max(p.lists.Load(), 1)))
	return rate
}

// unexpectedSeatAnswers counts the answers of t a correct API does not give.
func unexpectedSeatAnswers(t *tally) int {
	n := 0
	for k, c := range t.counts {
		if !expectedSeatAnswers[k] {
			n += c
		}
	}
	return n
}

// audit reads the sale from MySQL, prints the plain audit's figures and the groups'
// and reports whether they are all zero.
func (p *groupPhase) audit(ctx context.Context, w io.Writer, db *sql.DB) (bool, error) {
	s, err := loadSale(ctx, db, p.sale)
	if err != nil {
		return false, err
	}
	orders, err := loadOrders(ctx, db, p.sale)
	if err != nil {
		return false, err
	}
	gs, err := loadGroupSale(ctx, db, p.sale)
	if err != nil {
		return false, err
	}
	rep, grep := audit(s, orders, p.ledger), auditGroups(gs, orders)
	fmt.Fprintf(w, "  audit of sale %d: oversold %d, lost %d, refused %d, duplicated %d, over limit %d, mismatched %d, unanswered %d\n",
		p.sale, rep.Oversold, len(rep.Lost), len(rep.Refused), rep.Duplicated(), len(rep.OverLimit),
		len(rep.Mismatched), rep.Unanswered)
	grep.print(w)
	return rep.OK() && grep.OK(), nil
}

// after says when a wait ended, counted from start, or that it gave up.
func after(done bool, at, start time.Time) string {
	if !done {
		return "never (gave up)"
	}
	return fmt.Sprintf("%.2fs", at.Sub(start).Seconds())
}

// filled is what fill did.
type filled struct {
	groups, seats int
	answers       *tally // every join it sent
}

// fill takes the seats left in every open group of the sale, each with a new user
// (ids from firstUser on), until the sale has no open group, a round of joins takes
// no seat, or deadline passes; the audit then finds the groups left open.
func (p *groupPhase) fill(ctx context.Context, conns int, deadline time.Time, firstUser int64) (filled, error) {
	f := filled{answers: newTally()}
	seen := map[string]bool{}
	user := firstUser
	for time.Now().Before(deadline) {
		r, open := p.api.openGroups(ctx, p.sale)
		if r.status != http.StatusOK {
			return f, fmt.Errorf("list the open groups: %s %.200s", r.label(), r.body)
		}
		type seat struct {
			group string
			user  *seatUser
		}
		var seats []seat
		for _, g := range open {
			seen[g.ID] = true
			for range g.Size - g.Members {
				tok, err := p.api.buyerToken(user)
				if err != nil {
					return f, err
				}
				seats = append(seats, seat{g.ID, &seatUser{id: user, buyer: p.api.subject(user), token: tok}})
				user++
			}
		}
		if len(seats) == 0 {
			break
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		tallies := make([]*tally, min(conns, len(seats)))
		for i := range tallies {
			t := newTally()
			tallies[i] = t
			wg.Go(func() {
				for j := int(next.Add(1) - 1); j < len(seats) && ctx.Err() == nil; j = int(next.Add(1) - 1) {
					s := seats[j]
					r := p.api.joinGroup(ctx, s.group, s.user.token, 1)
					t.add(r)
					if r.status == http.StatusAccepted {
						p.seated(r, s.user, s.group)
					}
				}
			})
		}
		wg.Wait()
		before := f.answers.counts["join 202"]
		for _, t := range tallies {
			f.answers.merge(t)
		}
		if err := ctx.Err(); err != nil {
			return f, err
		}
		if f.answers.counts["join 202"] == before {
			break // no seat taken: the audit tells why
		}
	}
	f.groups, f.seats = len(seen), f.answers.counts["join 202"]
	return f, nil
}

// waitUngrouped polls MySQL every poll until no order of the sale is grouping, and
// returns the time of the poll that saw none; false when deadline passed first.
func waitUngrouped(ctx context.Context, db *sql.DB, activityID int64, poll time.Duration,
	deadline time.Time) (time.Time, bool, error) {
	return pollUntil(ctx, &poll, deadline, func() (bool, error) {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE activity_id = ? AND status = 'grouping'",
			activityID).Scan(&n)
		if err != nil {
			return false, fmt.Errorf("count grouping orders: %w", err)
		}
		return n == 0, nil
	})
}

// groupSale is a group-buy sale's groups and accounts as MySQL holds them.
type groupSale struct {
	ID int64
	// Sold is activities.sold: the units MySQL counts as taken.
	Sold int64
	// Cap is per_user_participations, 0 for none.
	Cap    int64
	Groups []groupRow
}

// groupRow is a row of sale_groups.
type groupRow struct {
	ID            string
	Size, Members int
	Status        string
}

func loadGroupSale(ctx context.Context, db *sql.DB, activityID int64) (groupSale, error) {
	s := groupSale{ID: activityID}
	err := db.QueryRowContext(ctx, "SELECT sold, COALESCE(per_user_participations, 0) FROM activities WHERE id = ?",
		activityID).Scan(&s.Sold, &s.Cap)
	if err != nil {
		return s, fmt.Errorf("load activity %d: %w", activityID, err)
	}
	rows, err := db.QueryContext(ctx, "SELECT id, size, members, status FROM sale_groups WHERE activity_id = ?", activityID)
	if err != nil {
		return s, fmt.Errorf("load groups: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g groupRow
		if err := rows.Scan(&g.ID, &g.Size, &g.Members, &g.Status); err != nil {
			return s, fmt.Errorf("load groups: %w", err)
		}
		s.Groups = append(s.Groups, g)
	}
	return s, rows.Err()
}

// groupReport is the audit of a group-buy sale after every group filled and MySQL
// caught up; the figures of the plain audit (oversold, lost, ...) are audit's.
type groupReport struct {
	Groups   int
	ByStatus map[string]int
	// OverSize are groups with more seats than their size: in held orders, or in the
	// members MySQL recorded.
	OverSize []string
	// Miscounted are groups whose recorded members are not their held orders.
	Miscounted []string
	// Twice are "group/buyer" pairs: a buyer with two seats held in one group.
	Twice []string
	// OverCap maps buyers holding more orders than per_user_participations to them.
	OverCap map[string]int
	// Homeless are orders without a group, or of a group MySQL does not record.
	Homeless []string
	// Unsettled are groups not complete, and orders whose status is not what their
	// group's says (complete: created or paid; open: grouping; failed: cancelled).
	Unsettled []string
	// Unbalanced is activities.sold less the units in held orders (0 when they agree).
	Unbalanced int64
}

// OK reports whether every figure is zero.
func (r groupReport) OK() bool {
	return len(r.OverSize) == 0 && len(r.Miscounted) == 0 && len(r.Twice) == 0 && len(r.OverCap) == 0 &&
		len(r.Homeless) == 0 && len(r.Unsettled) == 0 && r.Unbalanced == 0
}

// orderStatusOf is the status an order of a group in each status must have.
var orderStatusOf = map[string][]string{"complete": {"created", "paid"}, "open": {"grouping"},
	"failed": {"cancelled"}}

// auditGroups checks a group-buy sale whose groups should all be complete: no group
// over its size or holding a user twice, MySQL's members and sold counting what the
// orders hold, no user over the cap, every order in a recorded group with the status
// its group gives it.
func auditGroups(s groupSale, orders []storedOrder) groupReport {
	r := groupReport{Groups: len(s.Groups), ByStatus: map[string]int{}, OverCap: map[string]int{}}
	byID := make(map[string]groupRow, len(s.Groups))
	for _, g := range s.Groups {
		byID[g.ID] = g
		r.ByStatus[g.Status]++
		if g.Status != "complete" {
			r.Unsettled = append(r.Unsettled, g.ID)
		}
	}
	seats := map[string]int{}   // held orders by group
	pairs := map[string]int{}   // held orders by group/buyer
	perUser := map[string]int{} // held orders by buyer
	var held int64
	for _, o := range orders {
		if holds(o.Status) {
			held += o.Quantity
		}
		g, ok := byID[o.GroupID]
		if !ok {
			r.Homeless = append(r.Homeless, o.ID)
			continue
		}
		if !slices.Contains(orderStatusOf[g.Status], o.Status) {
			r.Unsettled = append(r.Unsettled, o.ID)
		}
		if !holds(o.Status) {
			continue
		}
		seats[o.GroupID]++
		pairs[o.GroupID+"/"+o.Buyer]++
		perUser[o.Buyer]++
	}
	for _, g := range s.Groups {
		if seats[g.ID] > g.Size || g.Members > g.Size {
			r.OverSize = append(r.OverSize, g.ID)
		}
		if g.Status != "failed" && seats[g.ID] != g.Members { // a failed group's orders hold nothing
			r.Miscounted = append(r.Miscounted, g.ID)
		}
	}
	for k, n := range pairs {
		if n > 1 {
			r.Twice = append(r.Twice, k)
		}
	}
	for u, n := range perUser {
		if s.Cap > 0 && int64(n) > s.Cap {
			r.OverCap[u] = n
		}
	}
	r.Unbalanced = s.Sold - held
	for _, l := range [][]string{r.OverSize, r.Miscounted, r.Twice, r.Homeless, r.Unsettled} {
		sort.Strings(l)
	}
	return r
}

// print writes the group figures on one line, with a few examples of each problem.
func (r groupReport) print(w io.Writer) {
	users := make([]string, 0, len(r.OverCap))
	for u, n := range r.OverCap {
		users = append(users, fmt.Sprintf("buyer %q holds %d", u, n))
	}
	sort.Strings(users)
	fmt.Fprintf(w, "  %-16s %d groups (%s): over size %d%s, miscounted %d%s, twice in a group %d%s, over the cap %d%s, without a group %d%s, unsettled %d%s, sold minus held units %d\n",
		"", r.Groups, byStatus(r.ByStatus), len(r.OverSize), examples(r.OverSize), len(r.Miscounted),
		examples(r.Miscounted), len(r.Twice), examples(r.Twice), len(r.OverCap), examples(users),
		len(r.Homeless), examples(r.Homeless), len(r.Unsettled), examples(r.Unsettled), r.Unbalanced)
}
