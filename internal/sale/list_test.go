package sale_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/internal/sale"
	"seckill/internal/testutil"
)

// activityRows counts the rows GORM's session reads from activities, and logs nothing.
type activityRows struct {
	logger.Interface
	n atomic.Int64
}

func (r *activityRows) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	if sql, rows := fc(); strings.HasPrefix(sql, "SELECT * FROM `activities`") {
		r.n.Add(rows)
	}
}

// The public list reads an archived sale once, and keeps it: a load after the first
// reads the live sales, those archived within the last hour and the new ones, and
// answers the same list as a whole read. A sale the last load had live, archived since
// with a time the next load does not ask for (a worker's clock far behind), makes a
// whole read, and shows archived.
func TestPublicListReadsArchivedSalesOnce(t *testing.T) {
	rows := &activityRows{Interface: logger.Discard}
	db := testutil.MySQL(t).Gorm.Session(&gorm.Session{Logger: rows})
	f := newFixtureOn(t, db, 5, 1)
	ctx := context.Background()
	now := time.Now()
	ids := []int64{f.act}
	for range 9 {
		a, err := f.svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "s", ProductName: "p", PriceCents: 100, Stock: 5,
			PerUserLimit: 1, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	archive := func(at time.Time, ids ...int64) {
		t.Helper()
		if err := db.Exec("UPDATE activities SET archived_at = ? WHERE id IN ?", at, ids).Error; err != nil {
			t.Fatal(err)
		}
	}
	archive(now.Add(-48*time.Hour), ids[:6]...) // the history: 6 sales archived long ago
	// load waits for the next interval of the snapshot, reads the list and returns the
	// rows of activities it read and the sales archived in it, by id.
	load := func() (int64, map[int64]bool) {
		t.Helper()
		time.Sleep(sale.CatalogAge)
		before := rows.n.Load()
		list, _, err := f.svc.Catalog.PublicActivities(ctx, sale.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		archived := map[int64]bool{}
		for _, a := range list {
			archived[a.ID] = a.ArchivedAt != nil
		}
		return rows.n.Load() - before, archived
	}
	check := func(step string, read int64, got map[int64]bool, wantRead int64, wantArchived ...int64) {
		t.Helper()
		want := map[int64]bool{}
		for _, id := range ids {
			want[id] = false
		}
		for _, id := range wantArchived {
			want[id] = true
		}
		if read != wantRead || len(got) != len(want) {
			t.Errorf("%s: read %d rows of activities, listed %d sales; want %d rows, %d sales", step, read, len(got), wantRead, len(want))
		}
		for id, archived := range want {
			if g, ok := got[id]; !ok || g != archived {
				t.Errorf("%s: sale %d listed %v, archived %v; want listed, archived %v", step, id, ok, g, archived)
			}
		}
	}

	read, got := load()
	check("the first load", read, got, 10, ids[:6]...)
	read, got = load()
	check("the next load", read, got, 4, ids[:6]...)

	archive(time.Now(), ids[6]) // archived now: read again for an hour
	a, err := f.svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "new", ProductName: "p", PriceCents: 100, Stock: 5,
		PerUserLimit: 1, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, a.ID)
	read, got = load()
	check("after an archive and a new sale", read, got, 5, ids[:7]...)

	archive(now.Add(-48*time.Hour), ids[7]) // by a clock two days behind: not asked for
	read, got = load()
	check("after an archive the load does not ask for", read, got, 4+11, ids[:8]...)
	read, got = load()
	check("the load after it", read, got, 4, ids[:8]...)
}
