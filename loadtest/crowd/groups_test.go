package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/auth"
)

const testSecret = "group-test-secret"

// fakeGroups serves the three group routes the group phase uses, from memory, and
// logs what it was asked: "list", "open <user>", "join <group> <user>".
type fakeGroups struct {
	t      *testing.T
	size   int
	verify *auth.Verifier

	mu      sync.Mutex
	groups  []*fakeGroup
	log     []string
	orders  int
	badSize bool // answer 202s with a group of another size
}

type fakeGroup struct {
	id      string
	members []string
	full    bool // answers group_full although its members say otherwise
}

func newFakeGroups(t *testing.T, size int) (*fakeGroups, *api) {
	f := &fakeGroups{t: t, size: size, verify: auth.NewVerifier(testSecret, nil)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, newAPI([]string{srv.URL}, 4, 5*time.Second, testSecret)
}

// add opens a group held by users, as other buyers would.
func (f *fakeGroups) add(users ...int64) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := &fakeGroup{id: fmt.Sprintf("g%d", len(f.groups)+1)}
	for _, u := range users {
		g.members = append(g.members, strconv.FormatInt(u, 10))
	}
	f.groups = append(f.groups, g)
	return g.id
}

func (f *fakeGroups) group(id string) *fakeGroup {
	for _, g := range f.groups {
		if g.id == id {
			return g
		}
	}
	return nil
}

func (f *fakeGroups) view(g *fakeGroup) groupView {
	size := f.size
	if f.badSize {
		size++
	}
	return groupView{ID: g.id, ActivityID: 7, Size: size, Members: len(g.members), Status: "open"}
}

func (f *fakeGroups) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

func (f *fakeGroups) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	answer := func(status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}
	conflict := func(code string) {
		answer(http.StatusConflict, map[string]any{"error": map[string]string{"code": code}})
	}
	if r.Method == http.MethodGet && r.URL.Path == "/api/v1/activities/7/groups" {
		f.log = append(f.log, "list")
		var open []groupView
		for _, g := range f.groups {
			if len(g.members) < f.size {
				open = append(open, f.view(g))
			}
		}
		slices.SortStableFunc(open, func(a, b groupView) int { return b.Members - a.Members })
		answer(http.StatusOK, map[string]any{"groups": open})
		return
	}
	id, err := f.verify.Verify(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), time.Now())
	if err != nil {
		answer(http.StatusUnauthorized, map[string]any{"error": map[string]string{"code": "unauthorized"}})
		return
	}
	user := string(id.Buyer)
	var g *fakeGroup
	switch gid, ok := strings.CutPrefix(r.URL.Path, "/api/v1/groups/"); {
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/activities/7/groups":
		f.log = append(f.log, "open "+user)
		g = &fakeGroup{id: fmt.Sprintf("g%d", len(f.groups)+1), members: []string{user}}
		f.groups = append(f.groups, g)
	case r.Method == http.MethodPost && ok && strings.HasSuffix(gid, "/join"):
		gid = strings.TrimSuffix(gid, "/join")
		f.log = append(f.log, fmt.Sprintf("join %s %s", gid, user))
		if g = f.group(gid); g == nil {
			answer(http.StatusNotFound, map[string]any{"error": map[string]string{"code": "not_found"}})
			return
		}
		switch {
		case slices.Contains(g.members, user):
			conflict("already_in_group")
			return
		case g.full || len(g.members) >= f.size:
			conflict("group_full")
			return
		}
		g.members = append(g.members, user)
	default:
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		return
	}
	f.orders++
	answer(http.StatusAccepted, seatAnswer{Group: f.view(g), Order: order{ID: "o" + strconv.Itoa(f.orders),
		ActivityID: 7, Buyer: user, Quantity: 1, Status: "queued", GroupID: g.id}})
}

// newTestPhase is a group phase on the fake's sale 7 with users 100..100+users-1.
func newTestPhase(t *testing.T, a *api, cfg groupConfig, users int) *groupPhase {
	t.Helper()
	cfg.FirstUser = 100
	tokens, err := a.tokens(cfg.FirstUser, users)
	if err != nil {
		t.Fatal(err)
	}
	return &groupPhase{api: a, cfg: cfg, sale: 7, tokens: tokens, ledger: newLedger()}
}

func TestSeatBuyerListsOpensAndJoins(t *testing.T) {
	ctx := context.Background()
	f, a := newFakeGroups(t, 3)
	p := newTestPhase(t, a, groupConfig{Size: 3, Seats: 2, Open: 0, Refresh: time.Second}, 100)
	b := newSeatBuyer(p, 1)
	start := time.Now()
	step := func(after time.Duration) answer {
		t.Helper()
		r, ok := b.step(ctx, start.Add(after))
		if !ok {
			t.Fatalf("step at %s: the users ran out", after)
		}
		return r
	}

	// Nothing open: it lists, opens while the empty list is younger than relist, then
	// lists again.
	step(0)
	step(10 * time.Millisecond)
	step(20 * time.Millisecond)
	step(relist + time.Millisecond)
	want := []string{"list", "open 100", "open 101", "list"}
	if got := f.requests(); !slices.Equal(got, want) {
		t.Fatalf("requests %q, want %q", got, want)
	}

	// The list now shows the two groups it opened: the third user joins one, the
	// first user (its turn again) joins the one it does not hold a seat in.
	step(relist + 2*time.Millisecond)
	step(relist + 3*time.Millisecond)
	got := f.requests()[4:]
	if len(got) != 2 || !strings.HasPrefix(got[0], "join g") || !strings.HasSuffix(got[0], " 102") ||
		got[1] != "join g2 100" {
		t.Fatalf("requests after the list %q, want user 102 joining a group and user 100 joining g2", got)
	}

	// A join answered group_full: the group is forgotten and the next step lists.
	gid := f.add(900, 901)
	f.mu.Lock()
	f.group(gid).full = true
	f.mu.Unlock()
	b.list, b.fetched = []groupView{{ID: gid, Size: 3, Members: 2}}, start.Add(relist+3*time.Millisecond)
	if r := step(relist + 4*time.Millisecond); r.label() != "join 409 group_full" {
		t.Fatalf("join of a full group: %s, want join 409 group_full", r.label())
	}
	if len(b.list) != 0 {
		t.Errorf("list after group_full: %+v, want the group forgotten", b.list)
	}
	if r := step(relist + 5*time.Millisecond); r.kind != "list" {
		t.Errorf("step after group_full: %s, want a list", r.label())
	}

	// A list Refresh old is fetched again although it shows groups to join.
	b.list = []groupView{{ID: "g1", Size: 3, Members: 1}}
	if r := step(relist + 5*time.Millisecond + time.Second); r.kind != "list" {
		t.Errorf("step with a list a second old: %s, want a list", r.label())
	}

	if p.nContradictions != 0 {
		t.Errorf("%d contradicting answers: %v", p.nContradictions, p.contradictions)
	}
	// Every 202 is in the ledger, with its group.
	f.mu.Lock()
	defer f.mu.Unlock()
	acks := p.ledger.accepted
	if len(acks) != f.orders {
		t.Errorf("ledger holds %d seats, the fake made %d", len(acks), f.orders)
	}
	for id, a := range acks {
		if a.Group == "" || a.Quantity != 1 {
			t.Errorf("ledger: order %s %+v, want one unit in a group", id, a)
		}
	}
}

func TestSeatBuyerUsers(t *testing.T) {
	ctx := context.Background()
	f, a := newFakeGroups(t, 100)
	// Open 1: every seat opens a group, so each user's seats are easy to count.
	p := newTestPhase(t, a, groupConfig{Size: 100, Seats: 2, Open: 1, Refresh: time.Hour}, 4)
	b := newSeatBuyer(p, 1)
	now := time.Now()
	steps := 0
	for {
		_, ok := b.step(ctx, now)
		if !ok {
			break
		}
		if steps++; steps > 100 {
			t.Fatal("the buyer does not stop when its users run out")
		}
	}
	// 4 users x 2 seats, in turns of userTurns, after the first list.
	var seats []string
	for _, r := range f.requests()[1:] {
		seats = append(seats, strings.TrimPrefix(r, "open "))
	}
	want := []string{"100", "101", "102", "100", "101", "102", "103"}
	if !slices.Equal(seats, want) {
		t.Errorf("seats by user %q, want %q (then no user with a seat left in its turn)", seats, want)
	}
}

func TestSeatAnswerContradicts(t *testing.T) {
	f, a := newFakeGroups(t, 3)
	f.badSize = true
	p := newTestPhase(t, a, groupConfig{Size: 3, Seats: 1, Open: 1, Refresh: time.Hour}, 2)
	b := newSeatBuyer(p, 1)
	b.step(context.Background(), time.Now()) // the list
	if r, _ := b.step(context.Background(), time.Now()); r.status != http.StatusAccepted {
		t.Fatalf("open: %s", r.label())
	}
	if p.nContradictions != 1 || !strings.Contains(p.contradictions[0], "a group of 4 seats") {
		t.Errorf("contradicting answers %d %q, want one: a group of 4 seats", p.nContradictions, p.contradictions)
	}
}

func TestFill(t *testing.T) {
	f, a := newFakeGroups(t, 3)
	p := newTestPhase(t, a, groupConfig{Size: 3, Seats: 1}, 0)
	f.add(1)
	f.add(2, 3)
	f.add(4, 5, 6)
	got, err := p.fill(context.Background(), 4, time.Now().Add(10*time.Second), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got.groups != 2 || got.seats != 3 || got.answers.breakdown() != "join 202: 3" {
		t.Errorf("fill: %d groups, %d seats [%s], want 2 groups, 3 seats [join 202: 3]", got.groups, got.seats,
			got.answers.breakdown())
	}
	for _, g := range f.groups {
		if len(g.members) != 3 {
			t.Errorf("group %s has %d members after the fill, want 3", g.id, len(g.members))
		}
	}
	if len(p.ledger.accepted) != 3 {
		t.Errorf("ledger holds %d seats, want 3", len(p.ledger.accepted))
	}

	// A group that takes nobody: the fill stops after a round without a seat.
	f.mu.Lock()
	f.groups = append(f.groups, &fakeGroup{id: "stuck", members: []string{"7"}, full: true})
	f.mu.Unlock()
	got, err = p.fill(context.Background(), 4, time.Now().Add(10*time.Second), 2000)
	if err != nil || got.seats != 0 || got.answers.counts["join 409 group_full"] != 2 {
		t.Errorf("fill of a stuck group: %+v [%s], %v; want one round of two group_full", got, got.answers.breakdown(), err)
	}
}

// groupFigures are auditGroups' counts.
type groupFigures struct {
	OverSize, Miscounted, Twice, OverCap, Homeless, Unsettled int
	Unbalanced                                                int64
	OK                                                        bool
}

func TestAuditGroups(t *testing.T) {
	complete := func(id string, size, members int) groupRow {
		return groupRow{ID: id, Size: size, Members: members, Status: "complete"}
	}
	seat := func(id, group string, user int64, status string) storedOrder {
		return storedOrder{ID: id, Buyer: strconv.FormatInt(user, 10), Quantity: 1, Status: status, GroupID: group}
	}
	clean := []storedOrder{seat("o1", "g1", 1, "created"), seat("o2", "g1", 2, "paid"), seat("o3", "g1", 3, "created"),
		seat("o4", "g2", 1, "created"), seat("o5", "g2", 4, "created")}
	tests := []struct {
		name   string
		sale   groupSale
		orders []storedOrder
		want   groupFigures
	}{
		{"every group complete", groupSale{Sold: 5, Cap: 2, Groups: []groupRow{complete("g1", 3, 3), complete("g2", 2, 2)}},
			clean, groupFigures{OK: true}},
		{"a group over its size", groupSale{Sold: 6, Groups: []groupRow{complete("g1", 3, 3), complete("g2", 2, 3)}},
			append(slices.Clone(clean), seat("o6", "g2", 5, "created")), groupFigures{OverSize: 1}},
		{"members not what the orders hold", groupSale{Sold: 5, Groups: []groupRow{complete("g1", 3, 2), complete("g2", 2, 2)}},
			clean, groupFigures{Miscounted: 1}},
		{"a user twice in a group", groupSale{Sold: 3, Groups: []groupRow{complete("g1", 3, 3)}},
			[]storedOrder{seat("o1", "g1", 1, "created"), seat("o2", "g1", 1, "created"), seat("o3", "g1", 3, "created")},
			groupFigures{Twice: 1}},
		{"over the cap on participations", groupSale{Sold: 5, Cap: 1, Groups: []groupRow{complete("g1", 3, 3), complete("g2", 2, 2)}},
			clean, groupFigures{OverCap: 1}},
		{"an order without a recorded group", groupSale{Sold: 6, Groups: []groupRow{complete("g1", 3, 3), complete("g2", 2, 2)}},
			append(slices.Clone(clean), seat("o6", "", 9, "created"), seat("o7", "g9", 9, "cancelled")),
			groupFigures{Homeless: 2}},
		{"a group still open, an order grouping in a complete one", groupSale{Sold: 5,
			Groups: []groupRow{{ID: "g1", Size: 3, Members: 3, Status: "open"}, complete("g2", 2, 2)}},
			[]storedOrder{seat("o1", "g1", 1, "grouping"), seat("o2", "g1", 2, "grouping"), seat("o3", "g1", 3, "grouping"),
				seat("o4", "g2", 1, "created"), seat("o5", "g2", 4, "grouping")},
			groupFigures{Unsettled: 2}},
		{"a failed group: unsettled, its cancelled orders hold nothing", groupSale{Sold: 3,
			Groups: []groupRow{complete("g1", 3, 3), {ID: "g2", Size: 2, Members: 2, Status: "failed"}}},
			[]storedOrder{seat("o1", "g1", 1, "created"), seat("o2", "g1", 2, "created"), seat("o3", "g1", 3, "created"),
				seat("o4", "g2", 1, "cancelled")},
			groupFigures{Unsettled: 1}},
		{"sold not what the orders hold", groupSale{Sold: 4, Groups: []groupRow{complete("g1", 3, 3), complete("g2", 2, 2)}},
			clean, groupFigures{Unbalanced: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := auditGroups(tt.sale, tt.orders)
			got := groupFigures{OverSize: len(r.OverSize), Miscounted: len(r.Miscounted), Twice: len(r.Twice),
				OverCap: len(r.OverCap), Homeless: len(r.Homeless), Unsettled: len(r.Unsettled),
				Unbalanced: r.Unbalanced, OK: r.OK()}
			if got != tt.want {
				var b strings.Builder
				r.print(&b)
				t.Errorf("figures:\n got %+v\nwant %+v\n%s", got, tt.want, b.String())
			}
		})
	}
}
