// Package funnel is what a sale's drop did, for the shop: who joined its line and
// waited how long, which purchases were taken and which refused and why, what became
// of the orders and the units, how fast it sold out, how fast buyers paid
// (GET /api/v1/admin/activities/{id}/funnel).
//
// Every figure is exact but the refusals: the orders' figures come from MySQL and the
// orders still queued in Redis, the line's from its own counts in Redis (internal/line),
// and the refusals from the APIs, each counting its own in process and adding them to
// Redis every FlushEvery (Refusals), so they may be that much behind. When a sale is
// archived its Redis part is kept in MySQL (Keep, table sale_funnels) before its keys
// go, and the funnel answers the same from there.
package funnel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/internal/apitime"
	"seckill/internal/snapshot"
	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/store"
	"seckill/internal/waitingroom"
)

// Rooms reads a sale's line counts (internal/waitingroom.Rooms).
type Rooms interface {
	Counts(ctx context.Context, activityID int64) (waitingroom.Counts, error)
}

var _ Rooms = (*waitingroom.Rooms)(nil)

// Funnel answers and keeps the funnels of sales.
type Funnel struct {
	db         *gorm.DB
	rdb        redis.UniversalClient
	activities *store.Activities
	orders     *store.Orders
	sales      *lifecycle.Sales
	lines      Rooms
	now        func() time.Time
	// archivedLines are the archived sales' lines as kept, read at most once a second
	// each however many ask (their public status).
	archivedLines *snapshot.Map[int64, ArchivedLine]
}

// New returns a Funnel over MySQL (db, activities, orders), Redis (rdb, sk) and the lines.
func New(db *gorm.DB, rdb redis.UniversalClient, activities *store.Activities, orders *store.Orders, sk *stock.Stock, lines Rooms) *Funnel {
	return &Funnel{db: db, rdb: rdb, activities: activities, orders: orders, sales: lifecycle.New(sk), lines: lines, now: time.Now,
		archivedLines: snapshot.NewMap[int64, ArchivedLine]("archived lines", time.Second)}
}

// ArchivedLine is what an archived sale's line showed when the archive kept it: the
// highest place admitted, the buyers who joined and those admitted (all 0 for a sale
// archived before they were kept, or without a line).
type ArchivedLine struct{ AdmittedThrough, Joined, Admitted int64 }

// ArchivedLine returns an archived sale's line as kept, from a snapshot of it read from
// MySQL at most once a second however many ask.
func (f *Funnel) ArchivedLine(ctx context.Context, activityID int64) (ArchivedLine, error) {
	return f.archivedLines.Get(ctx, activityID, func(ctx context.Context) (ArchivedLine, error) {
		var k kept
		err := f.db.WithContext(ctx).Select("activity_id", "line_admitted_through", "line_joined", "line_admitted").
			Take(&k, activityID).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return ArchivedLine{}, nil
		}
		if err != nil {
			return ArchivedLine{}, fmt.Errorf("read the kept line of activity %d: %w", activityID, err)
		}
		return ArchivedLine{AdmittedThrough: deref(k.LineAdmittedThrough), Joined: deref(k.LineJoined),
			Admitted: deref(k.LineAdmitted)}, nil
	})
}

// kept is a row of sale_funnels: what a sale's Redis state told its funnel when the sale
// was archived.
type kept struct {
	ActivityID            int64 `gorm:"primaryKey"`
	LineJoined            *int64
	LineJoinedBeforeStart *int64
	LineAdmitted          *int64
	LineAdmittedThrough   *int64
	LinePassesExpired     *int64
	LineWaits             *string // JSON: wait ms -> buyers
	Refused               string  // JSON: error code -> requests
	KeptAt                time.Time
}

func (kept) TableName() string { return "sale_funnels" }

// Funnel returns the funnel of a sale, live or archived. Errors: store.ErrNotFound.
func (f *Funnel) Funnel(ctx context.Context, activityID int64) (Figures, error) {
	a, err := f.activities.GetActivity(ctx, activityID)
	if err != nil {
		return Figures{}, err
	}
	out := Figures{ActivityID: activityID, AsOf: apitime.Of(f.now()), Purchases: Purchases{Refused: map[string]int64{}}}
	facts, err := f.orders.OrderFacts(ctx, activityID)
	if err != nil {
		return Figures{}, err
	}
	var queued []stock.QueuedOrder
	if a.Archived() {
		if err := f.fromKept(ctx, a, &out); err != nil {
			return Figures{}, err
		}
	} else {
		if queued, err = f.sales.QueuedOrders(ctx, activityID); err != nil {
			return Figures{}, err
		}
		refused, c, err := f.fromRedis(ctx, a)
		if err != nil {
			return Figures{}, err
		}
		out.Purchases.Refused = refused
		if c != nil {
			out.Line = lineOf(c.Joined, c.JoinedBeforeStart, c.Admitted, c.PassesExpired, c.Waits)
		}
	}
	ordersOf(&out, facts, queued, a.StockTotal, a.StartsAt)
	return out, nil
}

// fromRedis reads a live sale's refusals and, with a waiting room, its line's counts
// (nil without one) from Redis.
func (f *Funnel) fromRedis(ctx context.Context, a store.Activity) (map[string]int64, *waitingroom.Counts, error) {
	raw, err := f.rdb.HGetAll(ctx, refusedKey(a.ID)).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("read refusals: %w", err)
	}
	refused := make(map[string]int64, len(raw))
	for code, v := range raw {
		if refused[code], err = strconv.ParseInt(v, 10, 64); err != nil {
			return nil, nil, fmt.Errorf("refusals of %s: %q", code, v)
		}
	}
	if !a.WaitingRoom {
		return refused, nil, nil
	}
	c, err := f.lines.Counts(ctx, a.ID)
	if err != nil {
		return nil, nil, err
	}
	return refused, &c, nil
}

// fromKept fills in an archived sale's line and refusals from sale_funnels (none for a
// sale archived before the funnel was kept: no line, no refusals).
func (f *Funnel) fromKept(ctx context.Context, a store.Activity, out *Figures) error {
	var k kept
	err := f.db.WithContext(ctx).Take(&k, a.ID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the kept funnel of activity %d: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(k.Refused), &out.Purchases.Refused); err != nil {
		return fmt.Errorf("kept refusals of activity %d: %w", a.ID, err)
	}
	if k.LineJoined == nil {
		return nil
	}
	waits := map[int64]int64{}
	if k.LineWaits != nil {
		if err := json.Unmarshal([]byte(*k.LineWaits), &waits); err != nil {
			return fmt.Errorf("kept waits of activity %d: %w", a.ID, err)
		}
	}
	out.Line = lineOf(*k.LineJoined, deref(k.LineJoinedBeforeStart), deref(k.LineAdmitted), deref(k.LinePassesExpired), waits)
	return nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Keep writes what a sale's Redis state tells its funnel (its line's counts and waits,
// its refusals) to MySQL, once: the archive calls it once Redis takes no more writes for
// the sale (stock.MarkArchived) and before its keys are removed. A second call (an
// archive run that stopped half-way, its keys partly gone) changes nothing.
func (f *Funnel) Keep(ctx context.Context, a store.Activity) error {
	refused, c, err := f.fromRedis(ctx, a)
	if err != nil {
		return err
	}
	b, err := json.Marshal(refused)
	if err != nil {
		return err
	}
	k := kept{ActivityID: a.ID, Refused: string(b), KeptAt: f.now()}
	if c != nil {
		waits, err := json.Marshal(c.Waits)
		if err != nil {
			return err
		}
		w := string(waits)
		k.LineJoined, k.LineJoinedBeforeStart, k.LineAdmitted, k.LineAdmittedThrough, k.LinePassesExpired, k.LineWaits =
			&c.Joined, &c.JoinedBeforeStart, &c.Admitted, &c.AdmittedThrough, &c.PassesExpired, &w
	}
	if err := f.db.WithContext(ctx).Clauses(clause.Insert{Modifier: "IGNORE"}).Create(&k).Error; err != nil {
		return fmt.Errorf("keep the funnel of activity %d: %w", a.ID, err)
	}
	return nil
}

// AddRefused adds refusals of a sale to what MySQL keeps of its funnel once it is
// archived: those its APIs answered after the archive (a crowd still asking). A sale
// without a kept funnel (not archived, or not yet: its refusals in that instant are lost;
// or no such sale) changes nothing.
func (f *Funnel) AddRefused(ctx context.Context, activityID int64, byCode map[string]int64) error {
	err := f.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var k kept
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("activity_id", "refused").Take(&k, activityID).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		refused := map[string]int64{}
		if err := json.Unmarshal([]byte(k.Refused), &refused); err != nil {
			return err
		}
		for code, n := range byCode {
			refused[code] += n
		}
		b, err := json.Marshal(refused)
		if err != nil {
			return err
		}
		return tx.Model(&kept{}).Where("activity_id = ?", activityID).Update("refused", string(b)).Error
	})
	if err != nil {
		return fmt.Errorf("add refusals to the kept funnel of activity %d: %w", activityID, err)
	}
	return nil
}

// Keys are the funnel's keys of a sale, for the archive to remove.
func (f *Funnel) Keys(activityID int64) []string { return []string{refusedKey(activityID)} }
