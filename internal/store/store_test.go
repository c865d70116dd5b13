package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/internal/buyer"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

func newActivity(t *testing.T, s *store.Store, stock int64, limit int) store.Activity {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Activity{Name: "sale", ProductName: "phone", PriceCents: 100, StockTotal: stock,
		PerUserLimit: limit, StartsAt: now, EndsAt: now.Add(time.Hour), PayWindowSeconds: 900}
	if err := s.Activities.CreateActivity(context.Background(), &a, func(store.Activity) error { return nil }); err != nil {
		t.Fatalf("create activity: %v", err)
	}
	return a
}

var seq int

func order(a store.Activity, user int64, qty int) store.NewOrder {
	seq++
	now := time.Now().UTC().Truncate(time.Millisecond).Add(time.Duration(seq) * time.Millisecond)
	return store.NewOrder{Limit: a.PerUserLimit, Order: store.Order{
		ID: fmt.Sprintf("o%d-%d", a.ID, seq), ActivityID: a.ID, Buyer: buyer.Of(user), Quantity: qty,
		AmountCents: a.PriceCents * int64(qty), CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute)}}
}

func TestPersistBatchGuards(t *testing.T) {
	db := testutil.MySQL(t)
	s := store.New(db.Gorm, sale.EventViews{})
	ctx := context.Background()
	a := newActivity(t, s, 6, 2)

	first := []store.NewOrder{order(a, 1, 2), order(a, 2, 1), order(a, 3, 1)}
	tests := []struct {
		name       string
		batch      []store.NewOrder
		want       []string // status per order of batch
		wantExists []bool
		wantSold   int64
	}{
		{"fits", first, []string{"created", "created", "created"}, []bool{false, false, false}, 4},
		{"delivered again", first, []string{"created", "created", "created"}, []bool{true, true, true}, 4},
		{"one stored, one new", []store.NewOrder{first[1], order(a, 7, 1)}, []string{"created", "created"},
			[]bool{true, false}, 5},
		{"over the user's limit", []store.NewOrder{order(a, 1, 1)}, []string{"failed"}, []bool{false}, 5},
		{"last unit then over stock", []store.NewOrder{order(a, 4, 1), order(a, 5, 1), order(a, 6, 2)},
			[]string{"created", "failed", "failed"}, []bool{false, false, false}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := s.Batches.PersistBatch(ctx, tt.batch, outage.Outages{})
			if err != nil {
				t.Fatalf("PersistBatch: %v", err)
			}
			for i, o := range tt.batch {
				got := out[o.ID]
				if got.Status != tt.want[i] || got.Existed != tt.wantExists[i] {
					t.Errorf("order %d: got %+v, want status %s existed %v", i, got, tt.want[i], tt.wantExists[i])
				}
				if got.Status == "failed" && got.Reason == "" {
					t.Errorf("order %d failed without a reason", i)
				}
			}
			stored, err := s.Activities.GetActivity(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Sold != tt.wantSold {
				t.Errorf("sold = %d, want %d", stored.Sold, tt.wantSold)
			}
		})
	}
}

// MySQL's per-user rule is held by user_purchases' CHECKs, with no read of the totals:
// an order past the limit or the cap it was accepted under is stored failed, naming it,
// and the others of its batch stay created; a batch delivered again whose buyers are at
// their limit (the first attempt, which reads no order, counts them again and trips the
// CHECK) finds its orders stored, and fails none; a cancellation takes its units back
// under the CHECKs, and its buyer may buy again.
func TestPersistBatchUserRuleInMySQL(t *testing.T) {
	s := store.New(testutil.MySQL(t).Gorm, sale.EventViews{})
	ctx := context.Background()
	a := newActivity(t, s, 100, 1)
	capped := func(user int64, limit, cap int) store.NewOrder {
		o := order(a, user, 1)
		o.Limit, o.ParticipationCap = limit, cap
		return o
	}
	first := []store.NewOrder{capped(1, 1, 0), capped(2, 2, 1)}
	steps := []struct {
		name       string
		batch      []store.NewOrder
		want       []string // status per order, and for a failed one what its reason names
		wantExists []bool
	}{
		{"within", first, []string{"created", "created"}, []bool{false, false}},
		{"delivered again at the limit", first, []string{"created", "created"}, []bool{true, true}},
		{"past the limit", []store.NewOrder{capped(3, 1, 0), capped(1, 1, 0)},
			[]string{"created", "per-user limit of 1"}, []bool{false, false}},
		{"past the cap", []store.NewOrder{capped(2, 2, 1), capped(4, 1, 0)},
			[]string{"cap of 1 participations", "created"}, []bool{false, false}},
		{"a higher limit later", []store.NewOrder{capped(1, 2, 0)}, []string{"created"}, []bool{false}},
		{"again after a cancellation", []store.NewOrder{capped(3, 1, 0)}, []string{"created"}, []bool{false}},
	}
	var cancelled string // buyer 3's first order, cancelled before it buys again
	for _, st := range steps {
		if st.name == "again after a cancellation" {
			if _, _, err := s.Lifecycle.CancelOrder(ctx, cancelled, store.Access{Service: true}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := s.Lifecycle.ReturnedToStock(ctx, cancelled); err != nil {
				t.Fatal(err)
			}
		}
		if st.name == "past the limit" {
			cancelled = st.batch[0].ID
		}
		out, err := s.Batches.PersistBatch(ctx, st.batch, outage.Outages{})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for i, o := range st.batch {
			got := out[o.ID]
			ok := got.Status == st.want[i] || got.Status == "failed" && strings.Contains(got.Reason, st.want[i])
			if !ok || got.Existed != st.wantExists[i] {
				t.Errorf("%s: order %d is %+v, want %q, existed %v", st.name, i, got, st.want[i], st.wantExists[i])
			}
		}
	}
	held, err := s.Orders.Holdings(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Orders.Figures(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Each order counted once in user_purchases, delivered twice or not; buyer 3's
	// cancelled order taken back.
	want := map[buyer.ID]int64{buyer.Of(1): 2, buyer.Of(2): 1, buyer.Of(3): 1, buyer.Of(4): 1}
	for who, units := range want {
		if held[who] != units || f.Users[who] != units {
			t.Errorf("buyer %s holds %d units by its orders and %d by user_purchases, want %d",
				who, held[who], f.Users[who], units)
		}
	}
}

// A buyer's totals written before migration 00022 (no limit or cap beside them) are held
// to the limit and cap of the next orders added to them: an order past them is stored
// failed, and one within them is created.
func TestPersistBatchUserRuleOnTotalsFromBefore(t *testing.T) {
	db := testutil.MySQL(t)
	s := store.New(db.Gorm, sale.EventViews{})
	ctx := context.Background()
	a := newActivity(t, s, 100, 2)
	for user, units := range map[int64]int64{1: 2, 2: 1} { // as 00021's rows: no units_limit, no cap
		if err := db.Gorm.Exec("INSERT INTO user_purchases (activity_id, buyer, units, participations) VALUES (?, ?, ?, ?)",
			a.ID, buyer.Of(user), units, units).Error; err != nil {
			t.Fatal(err)
		}
	}
	past, within := order(a, 1, 1), order(a, 2, 1) // limit 2: buyer 1 would hold 3, buyer 2 holds 2
	out, err := s.Batches.PersistBatch(ctx, []store.NewOrder{past, within}, outage.Outages{})
	if err != nil {
		t.Fatal(err)
	}
	if got := out[past.ID]; got.Status != "failed" || !strings.Contains(got.Reason, "per-user limit of 2") {
		t.Errorf("the order past the limit is %+v, want failed over the per-user limit of 2", got)
	}
	if got := out[within.ID]; got.Status != "created" {
		t.Errorf("the order within the limit is %+v, want created", got)
	}
	f, err := s.Orders.Figures(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Users[buyer.Of(1)] != 2 || f.Users[buyer.Of(2)] != 2 {
		t.Errorf("user_purchases holds %v, want buyer 1 at 2 units and buyer 2 at 2", f.Users)
	}
}

// Once a rebuild has raised a sale's epoch, a batch claimed in an older one is refused
// whole, with nothing written (the rebuild may have read MySQL without it), while one
// claimed in the new epoch is written, and its guards still fail orders past the stock.
func TestPersistBatchRefusesClaimsBeforeARebuild(t *testing.T) {
	s := store.New(testutil.MySQL(t).Gorm, sale.EventViews{})
	ctx := context.Background()
	a := newActivity(t, s, 3, 3)
	epoch, err := s.Upkeep.NextRedisEpoch(ctx, a.ID)
	if err != nil || epoch != 1 {
		t.Fatalf("the first rebuild's epoch: %d, %v; want 1", epoch, err)
	}
	if _, err := s.Upkeep.NextRedisEpoch(ctx, a.ID+1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("epoch of an unknown sale: %v, want ErrNotFound", err)
	}
	stale, fresh := order(a, 1, 1), order(a, 2, 2)
	fresh.Epoch = epoch
	if out, err := s.Batches.PersistBatch(ctx, []store.NewOrder{fresh, stale}, outage.Outages{}); !errors.Is(err, store.ErrClaimedBeforeRebuild) {
		t.Fatalf("a batch with an order of epoch 0 after the rebuild: %v, %v; want ErrClaimedBeforeRebuild", out, err)
	}
	if got, err := s.Orders.OrdersByID(ctx, []string{stale.ID, fresh.ID}); err != nil || len(got) != 0 {
		t.Errorf("orders stored by the refused batch: %v, %v", got, err)
	}
	if held, err := s.Orders.Holdings(ctx, a.ID); err != nil || len(held) != 0 {
		t.Errorf("units held after the refused batch: %v, %v", held, err)
	}

	stale.Epoch = epoch // claimed again on the rebuilt state
	over := order(a, 3, 1)
	over.Epoch = epoch
	out, err := s.Batches.PersistBatch(ctx, []store.NewOrder{fresh, stale, over}, outage.Outages{})
	if err != nil || out[fresh.ID].Status != store.StatusCreated || out[stale.ID].Status != store.StatusCreated ||
		out[over.ID].Status != store.StatusFailed {
		t.Errorf("the batch claimed again: %+v, %v; want two created, the one past the stock failed", out, err)
	}
	if got, err := s.Activities.GetActivity(ctx, a.ID); err != nil || got.Sold != 3 || got.RedisEpoch != 1 {
		t.Errorf("activity after the batch: %+v, %v; want 3 sold, epoch 1", got, err)
	}
	// Claimed before the rebuild and past the stock now: refused as such, not stored
	// failed by the guard (the rebuilt state never counted it).
	late := order(a, 4, 1)
	if out, err := s.Batches.PersistBatch(ctx, []store.NewOrder{late}, outage.Outages{}); !errors.Is(err, store.ErrClaimedBeforeRebuild) {
		t.Errorf("an order of epoch 0 past the stock: %v, %v; want ErrClaimedBeforeRebuild", out, err)
	}
	if got, err := s.Orders.OrdersByID(ctx, []string{late.ID}); err != nil || len(got) != 0 {
		t.Errorf("stored: %v, %v; want nothing", got, err)
	}
}

// Many batches at once on one sale: MySQL never passes the stock, and every order
// is stored exactly once, created or failed.
func TestPersistBatchConcurrent(t *testing.T) {
	db := testutil.MySQL(t)
	s := store.New(db.Gorm, sale.EventViews{})
	ctx := context.Background()
	a := newActivity(t, s, 100, 3)

	var batches [][]store.NewOrder
	for b := 0; b < 20; b++ {
		var batch []store.NewOrder
		for i := 0; i < 10; i++ {
			batch = append(batch, order(a, int64(i%7+1+b%3*7), 1))
		}
		batches = append(batches, batch)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(batches)*2)
	for _, b := range batches {
		for rep := 0; rep < 2; rep++ { // each batch delivered twice, concurrently
			wg.Add(1)
			go func(b []store.NewOrder) {
				defer wg.Done()
				if _, err := s.Batches.PersistBatch(ctx, b, outage.Outages{}); err != nil {
					errs <- err
				}
			}(b)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("PersistBatch: %v", err)
	}
	counts, err := s.Orders.CountOrders(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	total := counts["created"].Orders + counts["failed"].Orders
	if total != 200 {
		t.Errorf("stored %d orders, want 200 (each once)", total)
	}
	act, _ := s.Activities.GetActivity(ctx, a.ID)
	if act.Sold != counts["created"].Units || act.Sold > act.StockTotal {
		t.Errorf("sold = %d, created units = %d, stock = %d", act.Sold, counts["created"].Units, act.StockTotal)
	}
	var over int64
	db.Gorm.Raw("SELECT COUNT(*) FROM user_purchases WHERE units > 3").Scan(&over)
	if over != 0 {
		t.Errorf("%d users above the limit", over)
	}
	// 21 users x limit 3 = 63 units can be created; the rest fail.
	if counts["created"].Units != 63 {
		t.Errorf("created units = %d, want 63", counts["created"].Units)
	}
}

// seatOrder is an order of a seat in group g of size 3.
func seatOrder(a store.Activity, user int64, g string) store.NewOrder {
	o := order(a, user, 1)
	o.GroupID, o.GroupSize, o.GroupExpiresAt, o.ParticipationCap = &g, 3, o.CreatedAt.Add(time.Minute), 2
	return o
}

// Seats in MySQL: orders wait grouping until the seat that fills the group turns every
// order of it created (pay window from then); a seat past the size, or a user past the
// cap on participations, is refused and stored failed; a failed group cancels its
// grouping orders once, giving their units back.
func TestPersistSeatsAndFailGroup(t *testing.T) {
	db := testutil.MySQL(t)
	s := store.New(db.Gorm, sale.EventViews{})
	ctx := context.Background()
	a := newActivity(t, s, 100, 5)
	steps := []struct {
		name  string
		batch []store.NewOrder
		want  []string
	}{
		{"two seats of g1", []store.NewOrder{seatOrder(a, 1, "g1"), seatOrder(a, 2, "g1")}, []string{"grouping", "grouping"}},
		{"the seat that fills g1, and one past its size", []store.NewOrder{seatOrder(a, 3, "g1"), seatOrder(a, 4, "g1")},
			[]string{"created", "failed"}},
		{"user 1 in two more groups: past the cap of 2", []store.NewOrder{seatOrder(a, 1, "g2"), seatOrder(a, 1, "g3")},
			[]string{"grouping", "failed"}},
		{"a seat of g4", []store.NewOrder{seatOrder(a, 5, "g4")}, []string{"grouping"}},
	}
	for _, st := range steps {
		out, err := s.Batches.PersistBatch(ctx, st.batch, outage.Outages{})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for i, o := range st.batch {
			if got := out[o.ID].Status; got != st.want[i] {
				t.Errorf("%s: order %d is %s (%s), want %s", st.name, i, got, out[o.ID].Reason, st.want[i])
			}
		}
	}
	var g1 []store.Order
	db.Gorm.Where("group_id = ?", "g1").Find(&g1)
	for _, o := range g1 {
		if o.Status == "created" && o.ExpiresAt.Before(o.PersistedAt.Add(14*time.Minute)) {
			t.Errorf("order %s of the complete group expires at %v: its pay window must start when the group filled", o.ID, o.ExpiresAt)
		}
	}
	for i, want := range []int{1, 0} {
		cancelled, err := s.Lifecycle.FailGroup(ctx, a.ID, "g4", 3, time.Now(), time.Now())
		if err != nil || len(cancelled) != want {
			t.Fatalf("fail g4 #%d: %d orders cancelled, %v; want %d", i+1, len(cancelled), err, want)
		}
	}
	stored, _ := s.Activities.GetActivity(ctx, a.ID)
	if stored.Sold != 4 { // g1's three seats and user 1's seat in g2
		t.Errorf("sold = %d, want 4", stored.Sold)
	}
	gs, err := s.Orders.ListGroups(ctx, a.ID, 500)
	if err != nil || len(gs) != 3 {
		t.Fatalf("groups = %+v, %v; want g1, g2, g4", gs, err)
	}
	for _, g := range gs {
		if g.ID == "g1" && (g.Status != "complete" || g.Members != 3 || len(g.Buyers) != 3) {
			t.Errorf("g1 = %+v, want complete with 3 members", g)
		}
		if g.ID == "g4" && g.Status != "failed" {
			t.Errorf("g4 = %+v, want failed", g)
		}
	}
}

// An order's marks reach its row as the batch writes it: early_access for one bought in
// the sale's early window, offered for one the waitlist made, neither for a plain one
// (the stats, the funnel and the events read them there).
func TestPersistBatchKeepsTheMarks(t *testing.T) {
	db := testutil.MySQL(t)
	s := store.New(db.Gorm, sale.EventViews{})
	a := newActivity(t, s, 10, 5)
	early, offered, plain := order(a, 1, 1), order(a, 2, 1), order(a, 3, 1)
	early.EarlyAccess, offered.Offered = true, true
	if _, err := s.Batches.PersistBatch(context.Background(), []store.NewOrder{early, offered, plain}, outage.Outages{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o              store.NewOrder
		early, offered bool
	}{{early, true, false}, {offered, false, true}, {plain, false, false}} {
		var row struct{ EarlyAccess, Offered bool }
		if err := db.Gorm.Raw("SELECT early_access, offered FROM orders WHERE id = ?", tc.o.ID).Scan(&row).Error; err != nil {
			t.Fatal(err)
		}
		if row.EarlyAccess != tc.early || row.Offered != tc.offered {
			t.Errorf("order %s stored early_access %v, offered %v; want %v, %v", tc.o.ID, row.EarlyAccess, row.Offered,
				tc.early, tc.offered)
		}
	}
}

// A batch's values reach MySQL as given, whatever they hold and whatever the
// connection's sql_mode: the batch inserts write plain strings and numbers into their
// text and leave the rest to the driver (a quote, a backslash, a control character),
// which escapes by the sql_mode. The handles interpolate arguments, as the service's do.
func TestPersistBatchWritesValuesAsGiven(t *testing.T) {
	odd := []string{"it's", `back\slash`, `ends\`, `\'`, "'; DROP TABLE orders; -- ", "?", `"q" ünï`, "a\tb\x00c", "é?'\\%_",
		"? /* # -- `x`"}
	for _, mode := range []string{"@@sql_mode", "CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"} {
		t.Run(mode, func(t *testing.T) {
			db := testutil.MySQL(t)
			cfg, err := mysql.ParseDSN(db.DSN)
			if err != nil {
				t.Fatal(err)
			}
			cfg.InterpolateParams, cfg.Params = true, map[string]string{"sql_mode": mode}
			gdb, err := gorm.Open(gormmysql.Open(cfg.FormatDSN()), &gorm.Config{Logger: logger.Discard})
			if err != nil {
				t.Fatal(err)
			}
			s := store.New(gdb, sale.EventViews{})
			ctx := context.Background()
			a := newActivity(t, s, 100, 5)
			var batch []store.NewOrder
			for i, v := range odd {
				o := order(a, int64(i+1), 1)
				o.Buyer = buyer.ID("buyer " + strings.ReplaceAll(v, "\x00", "")) // a subject has no control character
				key, fp := v, "fp "+v
				o.IdempotencyKey, o.RequestFingerprint = &key, &fp
				if i%3 == 0 {
					g := "group " + v
					o.GroupID, o.GroupSize, o.GroupExpiresAt = &g, 2, o.CreatedAt.Add(time.Minute)
				}
				batch = append(batch, o)
			}
			batch = append(batch, order(a, 42, 2)) // a decimal buyer: user_id 42
			out, err := s.Batches.PersistBatch(ctx, batch, outage.Outages{})
			if err != nil {
				t.Fatal(err)
			}
			failed := order(a, 43, 1)
			reason := odd[0] + odd[1] + odd[2]
			if _, err := s.Batches.StoreFailed(ctx, failed, reason); err != nil {
				t.Fatal(err)
			}
			failed.Status, failed.FailureReason = store.StatusFailed, &reason
			batch = append(batch, failed)
			for _, want := range batch {
				got, err := s.Orders.GetOrder(ctx, want.ID)
				if err != nil {
					t.Fatalf("order %s: %v (outcome %+v)", want.ID, err, out[want.ID])
				}
				if got.Buyer != want.Buyer || deref(got.IdempotencyKey) != deref(want.IdempotencyKey) ||
					deref(got.RequestFingerprint) != deref(want.RequestFingerprint) || deref(got.GroupID) != deref(want.GroupID) ||
					deref(got.FailureReason) != deref(want.FailureReason) || got.Quantity != want.Quantity ||
					got.AmountCents != want.AmountCents || !got.CreatedAt.Equal(want.CreatedAt) {
					t.Errorf("stored %+v\nwant %+v", got, want)
				}
				if n, ok := want.Buyer.UserID(); ok != (got.UserID != nil) || ok && *got.UserID != n {
					t.Errorf("order %s of buyer %q: user_id %v", want.ID, want.Buyer, got.UserID)
				}
			}
			var held []struct {
				Buyer buyer.ID
				Units int64
			}
			if err := gdb.Raw("SELECT buyer, units FROM user_purchases WHERE activity_id = ?", a.ID).Scan(&held).Error; err != nil {
				t.Fatal(err)
			}
			units := map[buyer.ID]int64{}
			for _, h := range held {
				units[h.Buyer] = h.Units
			}
			for _, o := range batch[:len(batch)-1] { // the failed order counts nowhere
				if units[o.Buyer] != int64(o.Quantity) {
					t.Errorf("user_purchases of %q: %d units, want %d", o.Buyer, units[o.Buyer], o.Quantity)
				}
			}
			if len(units) != len(batch)-1 {
				t.Errorf("user_purchases has %d buyers, want %d", len(units), len(batch)-1)
			}
		})
	}
}
