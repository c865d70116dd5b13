// Package store is the MySQL side of the flash sale: the activities, orders and
// user_purchases tables, written through GORM. It refuses oversell and over-limit
// orders inside the transaction that writes them, whatever Redis believed.
//
// New returns it as parts that share one connection and one clock, each a type of its
// own for one kind of work: Activities, Orders, Lifecycle, Batches and Upkeep. A caller
// takes the parts it uses.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/internal/buyer"
)

// Order statuses, the same words as the API. Queued orders live in Redis only.
const (
	StatusQueued    = "queued"
	StatusGrouping  = "grouping" // a seat in a group that has not filled yet
	StatusCreated   = "created"
	StatusPaid      = "paid"
	StatusCancelled = "cancelled"
	StatusFailed    = "failed"
	StatusRefunded  = "refunded" // paid, then refunded by the shop
)

// Who confirmed a payment (orders.paid_by): the shop's back end, an admin, or the buyer's
// own simulated payment.
const (
	PaidByService = "service"
	PaidByAdmin   = "admin"
	PaidByBuyer   = "buyer"
)

// Errors of the store.
var (
	// ErrNotFound means no such activity or order.
	ErrNotFound = errors.New("not found")
	// ErrNotPayable means the order is not awaiting payment (not created).
	ErrNotPayable = errors.New("the order is not awaiting payment")
	// ErrExpired means the order's pay window has passed.
	ErrExpired = errors.New("the order's pay window has passed")
	// ErrNotRefundable means the order is not paid, so there is nothing to refund.
	ErrNotRefundable = errors.New("the order is not paid, so it cannot be refunded")
)

// Activity is one row of activities.
type Activity struct {
	ID               int64 `gorm:"primaryKey"`
	Name             string
	ProductName      string
	PriceCents       int64
	StockTotal       int64
	Sold             int64 // units in created and paid orders
	PerUserLimit     int
	StartsAt         time.Time
	EndsAt           time.Time
	PayWindowSeconds int
	// RedisGen is the highest generation of the sale's Redis state (of its bucket 0)
	// that orders were written under (see internal/stock/rebuild.go); BucketGens has
	// the other buckets'.
	RedisGen int64
	// RedisEpoch is the epoch of the sale's Redis state: each rebuild from MySQL raises
	// it (NextRedisEpoch) before it reads MySQL, and the state it builds carries it.
	RedisEpoch int64
	// StockBuckets is how many Redis slots hold the sale's stock and buyers
	// (internal/stock/bucket.go).
	StockBuckets int `gorm:"default:1"`
	// Kind is "sale" or "group" (group-buy: GroupSize and GroupWindowSeconds are set).
	Kind               string `gorm:"default:sale"`
	GroupSize          *int
	GroupWindowSeconds *int
	// PerUserParticipations caps the orders one user holds in the sale; nil: no cap.
	PerUserParticipations *int
	// Room is the sale's waiting room (room.go).
	Room `gorm:"embedded"`
	// EarlyAccessSeconds is how long before StartsAt the holders of the sale's access
	// codes may buy (0: no early window).
	EarlyAccessSeconds int
	// ExternalRef is the shop's reference of the sale (its product or SKU id), carried by
	// every order event of the sale; Metadata a JSON object of the shop's, compacted.
	// Both nil when the shop set none.
	ExternalRef *string
	Metadata    []byte
	// Variants are a sale of variants' variants, by index (none for a sale without);
	// PerVariantLimit caps the units of one variant a buyer holds (nil: none).
	Variants        []Variant `gorm:"foreignKey:ActivityID"`
	PerVariantLimit *int
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// ArchivedAt is when MySQL began to answer for the sale alone, and RedisRemovedAt
	// when its Redis state was gone (archive.go); nil before.
	ArchivedAt, RedisRemovedAt *time.Time
}

// Variant is one row of activity_variants: a variant of a sale, by its index (Idx, 0
// up in the order given at the sale's creation). Names never change.
type Variant struct {
	ActivityID  int64 `gorm:"primaryKey;autoIncrement:false"`
	Idx         int   `gorm:"primaryKey;autoIncrement:false"`
	Name        string
	ExternalRef *string
	StockTotal  int64
	// Sold is the variant's units in created and paid orders (its share of
	// Activity.Sold).
	Sold int64
}

// TableName is activity_variants.
func (Variant) TableName() string { return "activity_variants" }

// variantsInOrder loads activities' variants by index.
func variantsInOrder(db *gorm.DB) *gorm.DB { return db.Order("idx") }

// Order is one row of orders.
type Order struct {
	ID         string `gorm:"primaryKey"`
	ActivityID int64
	Buyer      buyer.ID
	// UserID is the column user_id: Buyer's number for a decimal buyer, nil for any
	// other, written from Buyer with the row (BeforeCreate).
	UserID        *int64
	Quantity      int
	AmountCents   int64
	Status        string
	FailureReason *string
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	// ExpiresAt is the deadline in force: the end of the pay window (of the group's
	// window for a grouping order) plus the time MySQL outages took from it.
	ExpiresAt time.Time
	// WindowStartsAt and WindowEndsAt are the pay window as it was set: from when the
	// order became payable (stored created, or its group filled) to its end (nil in
	// rows written before they existed, and for grouping orders: see Window).
	WindowStartsAt, WindowEndsAt *time.Time
	PaidAt                       *time.Time
	// PaidBy is who confirmed the payment (PaidByService, PaidByAdmin, PaidByBuyer); nil
	// before the order is paid, and on orders paid before it was recorded.
	PaidBy      *string
	CancelledAt *time.Time
	// RefundedAt is when the shop refunded the paid order; Restock says whether its
	// units went back on sale then (nil on an order not refunded).
	RefundedAt  *time.Time
	Restock     *bool
	PersistedAt time.Time
	// GroupID is the order's group in a group-buy sale.
	GroupID *string
	// Variant and VariantIndex are the order's variant in a sale of variants: its name,
	// written from its index with the row (PersistBatch), and its index.
	Variant      *string
	VariantIndex *int
	// Offered is true for an order the waitlist made of units that came back.
	Offered bool
	// EarlyAccess is true for an order bought in the sale's early window, with an
	// access code.
	EarlyAccess bool
	// IdempotencyKey is the client's Idempotency-Key that made the order and
	// RequestFingerprint what the key remembers of the request; nil without one. A
	// rebuild of the sale's Redis state writes the key back (KeptKeys).
	IdempotencyKey     *string
	RequestFingerprint *string
}

// BeforeCreate fills the row's user_id from its buyer; GORM calls it for every row it
// inserts.
func (o *Order) BeforeCreate(*gorm.DB) error {
	o.UserID = nil
	if n, ok := o.Buyer.UserID(); ok {
		o.UserID = &n
	}
	return nil
}

// OffSale reports whether the order's units stay off sale for good: it was refunded
// without restock. They count neither as sold nor as available (Figures.OffSale).
func (o Order) OffSale() bool {
	return o.Status == StatusRefunded && o.Restock != nil && !*o.Restock
}

// Window is the order's pay window as it was set, before outages extended it: its
// columns, or, in a row written before they existed, created_at to expires_at (no outage
// was recorded then).
func (o Order) Window() (start, end time.Time) {
	start, end = o.CreatedAt, o.ExpiresAt
	if o.WindowStartsAt != nil && o.WindowEndsAt != nil {
		start, end = *o.WindowStartsAt, *o.WindowEndsAt
	}
	return start, end
}

// Windows gives the deadline in force, at now, of a window set to run from start to
// end: the end plus the time MySQL outages took from it (outage.Outages).
type Windows interface {
	Deadline(start, end, now time.Time) time.Time
}

// Deadline is the order's deadline in force at now: its pay window's end as outages
// extend it, never before the deadline it shows already.
func (o Order) Deadline(w Windows, now time.Time) time.Time {
	start, end := o.Window()
	if d := w.Deadline(start, end, now); d.After(o.ExpiresAt) {
		return d
	}
	return o.ExpiresAt
}

// Store holds the parts of the MySQL side (the package doc), for the mains and tests
// to wire from; SetClock sets the clock of them all.
type Store struct {
	Activities *Activities
	Orders     *Orders
	Lifecycle  *Lifecycle
	Batches    *Batches
	Upkeep     *Upkeep

	conn *conn
}

// conn is what the parts share: the database, the clock rows are stamped with, and how
// events render orders and groups (Views). Each part embeds it for these fields only:
// conn has no methods, so a part's method set is its own.
type conn struct {
	db    *gorm.DB
	now   func() time.Time
	views Views
}

type (
	// Activities creates, reads and changes the sales, the activities rows.
	Activities struct{ *conn }
	// Orders reads orders and groups: the API's reads, the stock ledger's totals, the
	// funnel's facts.
	Orders struct{ *conn }
	// Lifecycle writes an order's changes after its purchase (lifecycle.go): pay,
	// cancel, refund, expiry, a group's failure, and the units' return to Redis.
	Lifecycle struct{ *conn }
	// Batches writes the worker's batches of queued orders (persist.go).
	Batches struct{ *conn }
	// Upkeep reads and marks what archiving a sale (archive.go) and rebuilding its Redis
	// state need.
	Upkeep struct{ *conn }
)

// New returns a Store on db whose events show orders and groups as views render them.
func New(db *gorm.DB, views Views) *Store {
	c := &conn{db: db, now: time.Now, views: views}
	return &Store{Activities: &Activities{c}, Orders: &Orders{c}, Lifecycle: &Lifecycle{c},
		Batches: &Batches{c}, Upkeep: &Upkeep{c}, conn: c}
}

// SetClock replaces the clock every part stamps rows with (tests).
func (s *Store) SetClock(now func() time.Time) { s.conn.now = now }

// CreateActivity inserts a and sets its ID and timestamps. Before it returns, ready
// runs inside the transaction with the stored row; if ready fails the row is not kept.
func (s *Activities) CreateActivity(ctx context.Context, a *Activity, ready func(Activity) error) error {
	now := s.now()
	a.CreatedAt, a.UpdatedAt, a.Sold = now, now, 0
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(a).Error; err != nil {
			return fmt.Errorf("insert activity: %w", err)
		}
		return ready(*a)
	})
}

// GetActivity returns the activity or ErrNotFound.
func (s *Activities) GetActivity(ctx context.Context, id int64) (Activity, error) {
	var a Activity
	err := s.db.WithContext(ctx).Preload("Variants", variantsInOrder).Take(&a, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return a, ErrNotFound
	}
	return a, err
}

// ActivitiesBefore returns at most limit activities whose id is below before (0: from
// the newest), newest first.
func (s *Activities) ActivitiesBefore(ctx context.Context, before int64, limit int) ([]Activity, error) {
	q := s.db.WithContext(ctx).Preload("Variants", variantsInOrder).Order("id DESC").Limit(limit)
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	var as []Activity
	err := q.Find(&as).Error
	return as, err
}

// BucketGens returns, by activity and bucket, the highest generation of the Redis state
// of the buckets 1 and up of sales of several buckets that orders were written under
// (bucket 0's is Activity.RedisGen).
func (s *Upkeep) BucketGens(ctx context.Context) (map[int64]map[int]int64, error) {
	var rows []struct {
		ActivityID int64
		Bucket     int
		RedisGen   int64
	}
	if err := s.db.WithContext(ctx).Table("activity_buckets").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read bucket generations: %w", err)
	}
	out := map[int64]map[int]int64{}
	for _, r := range rows {
		if out[r.ActivityID] == nil {
			out[r.ActivityID] = map[int]int64{}
		}
		out[r.ActivityID][r.Bucket] = r.RedisGen
	}
	return out, nil
}

// NextRedisEpoch raises the epoch of a sale's Redis state (activities.redis_epoch) by one
// and returns it: a rebuild's first step, before it reads MySQL. The UPDATE waits for the
// transactions writing the sale's orders that hold its row, and once it has committed
// PersistBatch refuses orders claimed in an older epoch, so a rebuild that reads MySQL
// after it misses no order written under the state it replaces. ErrNotFound for an
// unknown sale, ErrArchived for an archived one (whose Redis state is not to come back).
func (s *Upkeep) NextRedisEpoch(ctx context.Context, activityID int64) (int64, error) {
	var epoch int64
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE activities SET redis_epoch = redis_epoch + 1 WHERE id = ? AND archived_at IS NULL", activityID)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			var n int64
			if err := tx.Model(&Activity{}).Where("id = ?", activityID).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return ErrNotFound
			}
			return ErrArchived
		}
		return tx.Raw("SELECT redis_epoch FROM activities WHERE id = ?", activityID).Scan(&epoch).Error
	})
	if err != nil {
		return 0, fmt.Errorf("raise the Redis epoch of activity %d: %w", activityID, err)
	}
	return epoch, nil
}

// UnarchivedIDs returns the id of every activity not archived: those whose orders Redis
// may still hold as queued.
func (s *Activities) UnarchivedIDs(ctx context.Context) ([]int64, error) {
	var ids []int64
	err := s.db.WithContext(ctx).Model(&Activity{}).Where("archived_at IS NULL").Pluck("id", &ids).Error
	return ids, err
}

// UpdateActivity changes an activity under a row lock: change edits the row (and may
// refuse with an error), then apply runs with the new row before the commit; if apply
// fails nothing is changed. An archived activity is ErrArchived, unchanged.
func (s *Activities) UpdateActivity(ctx context.Context, id int64, change func(*Activity) error, apply func(Activity) error) (Activity, error) {
	var a Activity
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&a, id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if a.Archived() {
			return ErrArchived
		}
		if err := tx.Order("idx").Where("activity_id = ?", id).Find(&a.Variants).Error; err != nil {
			return err
		}
		before := slices.Clone(a.Variants)
		if err := change(&a); err != nil {
			return err
		}
		for i, v := range a.Variants {
			if i < len(before) && v.StockTotal != before[i].StockTotal {
				if err := tx.Exec("UPDATE activity_variants SET stock_total = ? WHERE activity_id = ? AND idx = ?",
					v.StockTotal, id, v.Idx).Error; err != nil {
					return err
				}
			}
		}
		a.UpdatedAt = s.now()
		cols := map[string]any{"per_user_limit": a.PerUserLimit, "ends_at": a.EndsAt,
			"stock_total": a.StockTotal, "external_ref": a.ExternalRef, "metadata": a.Metadata, "updated_at": a.UpdatedAt,
			"early_access_seconds": a.EarlyAccessSeconds}
		maps.Copy(cols, a.Room.columns())
		if err := tx.Model(&Activity{}).Where("id = ?", id).Updates(cols).Error; err != nil {
			return err
		}
		return apply(a)
	})
	return a, err
}

// GetOrder returns the order or ErrNotFound.
func (s *Orders) GetOrder(ctx context.Context, id string) (Order, error) {
	var o Order
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, ErrNotFound
	}
	return o, err
}

// ListUserOrders returns up to limit of the buyer's orders, newest first.
func (s *Orders) ListUserOrders(ctx context.Context, who buyer.ID, limit int) ([]Order, error) {
	var os []Order
	err := s.db.WithContext(ctx).Where("buyer = ?", who).
		Order("created_at DESC, id DESC").Limit(limit).Find(&os).Error
	return os, err
}

// OrderRange is a page of a sale's orders in id order: those with an id after After
// ("" from the first) and before Before ("" to the last), of one Status ("" for any)
// and, when Buyer is not "", of that buyer only; at most Limit.
type OrderRange struct {
	ActivityID    int64
	Status        string
	Buyer         buyer.ID
	After, Before string
	Limit         int
}

// SaleOrders returns a page of a sale's orders in id order. A page of every buyer's
// orders reads one range of the index orders_by_sale (activity_id, id), or, of one
// status, of orders_by_activity (activity_id, status, and the id InnoDB appends). A
// buyer's page reads one range of orders_holdings (activity_id, buyer, id, status, ...),
// with or without a status, the rows it returns alone. The index is named: left to
// itself MariaDB reads the sale's first entries (ref on activity_id) and filters the
// ids, a scan of the sale up to the page, and a buyer's page of a buyer with many orders
// through the primary key, across every sale (TestBuyerPageReadsItsOwnRows).
func (s *Orders) SaleOrders(ctx context.Context, r OrderRange) ([]Order, error) {
	table := "orders FORCE INDEX (orders_by_sale)"
	if r.Status != "" {
		table = "orders FORCE INDEX (orders_by_activity)"
	}
	if r.Buyer != "" {
		table = "orders FORCE INDEX (orders_holdings)"
	}
	q := s.db.WithContext(ctx).Table(table).Where("activity_id = ? AND id > ?", r.ActivityID, r.After)
	if r.Before != "" {
		q = q.Where("id < ?", r.Before)
	}
	if r.Status != "" {
		q = q.Where("status = ?", r.Status)
	}
	if r.Buyer != "" {
		q = q.Where("buyer = ?", r.Buyer)
	}
	var os []Order
	if err := q.Order("id").Limit(r.Limit).Find(&os).Error; err != nil {
		return nil, fmt.Errorf("list the orders of activity %d: %w", r.ActivityID, err)
	}
	return os, nil
}

// OrdersByID returns the stored orders among ids, by id.
func (s *Orders) OrdersByID(ctx context.Context, ids []string) (map[string]Order, error) {
	found := make(map[string]Order, len(ids))
	if len(ids) == 0 {
		return found, nil
	}
	var os []Order
	if err := s.db.WithContext(ctx).Where("id IN ?", ids).Find(&os).Error; err != nil {
		return nil, err
	}
	for _, o := range os {
		found[o.ID] = o
	}
	return found, nil
}

// StatusCount is the number of orders and units of one status in one activity.
type StatusCount struct {
	Status string
	Orders int64
	Units  int64
	// OffSale is the units among Units kept off sale (refunded without restock).
	OffSale int64
	// Early is the orders among Orders bought in the early window.
	Early int64
}

// CountOrders returns the orders and units of an activity by status.
func (s *Orders) CountOrders(ctx context.Context, activityID int64) (map[string]StatusCount, error) {
	return countOrders(s.db.WithContext(ctx), activityID)
}

// countOrders is CountOrders on db, which may be a transaction, page by page
// (salePages).
func countOrders(db *gorm.DB, activityID int64) (map[string]StatusCount, error) {
	counts := map[string]StatusCount{}
	err := salePages(db, activityID, func(page *gorm.DB) error {
		var rows []StatusCount
		err := page.Select("status, COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS units, " +
			"COALESCE(SUM(CASE WHEN " + offSale + " THEN quantity ELSE 0 END), 0) AS off_sale, " +
			"COALESCE(SUM(early_access), 0) AS early").Group("status").Scan(&rows).Error
		for _, r := range rows {
			c := counts[r.Status]
			counts[r.Status] = StatusCount{Status: r.Status, Orders: c.Orders + r.Orders, Units: c.Units + r.Units,
				OffSale: c.OffSale + r.OffSale, Early: c.Early + r.Early}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// retryable reports MySQL errors that a fresh attempt of a batch of new orders may not
// meet again: those of lostToLocks, and a duplicate key from a concurrent writer of
// the same order.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return lostToLocks(err) || errors.As(err, &me) && me.Number == 1062
}

// lostToLocks reports a transaction MySQL gave up on for its locks alone: chosen as a
// deadlock's victim, or its lock wait timed out. InnoDB expects the application to run
// such a transaction again.
func lostToLocks(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// retrying runs fn up to attempts times while it fails with an error again accepts,
// waiting a little longer after each failure.
func retrying(ctx context.Context, attempts int, again func(error) bool, fn func() error) error {
	var err error
	for attempt := 0; attempt < attempts; attempt++ {
		if err = fn(); err == nil || !again(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
	return err
}

// transaction runs fn in a transaction of db, and again in a new one (five attempts in all)
// when MySQL gave up on it for its locks (a pay racing its order's expiry can meet the
// expiry's batch in a deadlock). fn starts from scratch on each attempt: it sets what it
// returns through its closure anew and has no effect outside tx.
func transaction(ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) error) error {
	return retrying(ctx, 5, lostToLocks, func() error { return db.WithContext(ctx).Transaction(fn) })
}

// offSale is the condition on orders whose units stay off sale (Order.OffSale).
const offSale = "status = 'refunded' AND restock = FALSE"

// Figures are an activity's stored totals, for the stock ledger.
type Figures struct {
	// Units by order status.
	Units map[string]int64
	// Sold is activities.sold: the units of grouping, created and paid orders, and
	// those kept off sale (OffSale).
	Sold int64
	// ReturnPending is the units of cancelled and refunded orders not yet confirmed
	// back in Redis, those that go back on sale.
	ReturnPending int64
	// OffSale is the units of orders refunded without restock: out of the sale for
	// good, neither sold nor available.
	OffSale int64
	// Users is what each buyer holds by user_purchases (userHoldings).
	Users map[buyer.ID]int64
	// Variants are, in a sale of variants, each variant's figures by index.
	Variants []VariantFigures
}

// VariantFigures are one variant's stored totals: its row, and the units of its orders
// that hold stock (grouping, created, paid), of its cancelled ones on their way back to
// Redis, and of those kept off sale (refunded without restock).
type VariantFigures struct {
	Variant
	Held, ReturnPending, OffSale int64
}

// Figures reads an activity's totals in one consistent read, of up to figuresTimeout:
// a transaction's default bound (config.MySQL: 2 s) is too short for a sale of a
// million orders, which its statements read page by page (salePages).
func (s *Orders) Figures(ctx context.Context, activityID int64) (Figures, error) {
	f := Figures{Units: map[string]int64{}}
	ctx, cancel := context.WithTimeout(ctx, figuresTimeout)
	defer cancel()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		counts, err := countOrders(tx, activityID)
		if err != nil {
			return err
		}
		for status, c := range counts {
			f.Units[status] = c.Units
		}
		f.OffSale = counts[StatusRefunded].OffSale
		if err := tx.Model(&Activity{}).Where("id = ?", activityID).Pluck("sold", &f.Sold).Error; err != nil {
			return err
		}
		if err := tx.Model(&Order{}).Where("activity_id = ? AND return_pending AND NOT ("+offSale+")", activityID).
			Select("COALESCE(SUM(quantity), 0)").Scan(&f.ReturnPending).Error; err != nil {
			return err
		}
		if f.Users, err = userHoldings(tx, activityID); err != nil {
			return err
		}
		f.Variants, err = variantFigures(tx, activityID)
		return err
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	return f, err
}

// figuresTimeout bounds Figures: below the API's 15 s bound on writing an answer.
const figuresTimeout = 10 * time.Second

// RebuildFacts are what a sale's Redis state is rebuilt from.
type RebuildFacts struct {
	Activity Activity
	// Units and Orders are, by buyer, the units and orders of Holdings.
	Units, Orders map[buyer.ID]int64
	// VariantUnits are, in a sale of variants, the units of Holdings by buyer and
	// variant index, and VariantOffSale those of OffSale by variant index.
	VariantUnits   map[buyer.ID]map[int]int64
	VariantOffSale map[int]int64
	// Stored are the orders Redis holds as queued that MySQL has already (those count
	// in the holdings, not as queued).
	Stored map[string]bool
	// OffSale is the units of orders refunded without restock whose buyers' holdings
	// Redis has given back: no buyer holds them and they are not for sale (while the
	// give-back is pending they are still in Units, their buyer's).
	OffSale int64
	// Seats are, for a group-buy sale, its groups with the seats MySQL has (one row per
	// seat; a group without one has a row with OrderID "").
	Seats []GroupSeat
}

// GroupSeat is a group of a sale and one seat of it whose order holds stock.
type GroupSeat struct {
	GroupID   string
	Size      int
	Status    string
	ExpiresAt time.Time
	OrderID   string
	Buyer     buyer.ID
	Quantity  int
}

// KeyedOrders returns a sale's orders made with an Idempotency-Key since since (id,
// buyer, created_at and the key's two columns only), whatever their status: the keys a
// rebuild of the sale's Redis state writes back. It reads the sale page by page
// (salePages).
func (s *Upkeep) KeyedOrders(ctx context.Context, activityID int64, since time.Time) ([]Order, error) {
	var orders []Order
	err := salePages(s.db.WithContext(ctx), activityID, func(page *gorm.DB) error {
		var keyed []Order
		err := page.Select("id", "buyer", "created_at", "idempotency_key", "request_fingerprint").
			Where("created_at >= ? AND idempotency_key IS NOT NULL", since).Find(&keyed).Error
		orders = append(orders, keyed...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("keyed orders of activity %d: %w", activityID, err)
	}
	return orders, nil
}

// RebuildFacts reads, in one consistent snapshot, what a sale's Redis state is rebuilt
// from, given the ids of the orders Redis holds as queued.
func (s *Upkeep) RebuildFacts(ctx context.Context, activityID int64, ids []string) (RebuildFacts, error) {
	f := RebuildFacts{Stored: map[string]bool{}}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Preload("Variants", variantsInOrder).First(&f.Activity, activityID).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNotFound
			}
			return err
		}
		var err error
		if f.Units, f.Orders, err = holdingsAndOrders(tx, activityID); err != nil {
			return err
		}
		if err := tx.Model(&Order{}).Where("activity_id = ? AND NOT return_pending AND "+offSale, activityID).
			Select("COALESCE(SUM(quantity), 0)").Scan(&f.OffSale).Error; err != nil {
			return err
		}
		if len(f.Activity.Variants) > 0 {
			if f.VariantUnits, f.VariantOffSale, err = variantHoldings(tx, activityID); err != nil {
				return err
			}
		}
		if f.Activity.Kind == "group" {
			if err := tx.Raw("SELECT g.id AS group_id, g.size, g.status, g.expires_at, "+
				"COALESCE(o.id, '') AS order_id, COALESCE(o.buyer, '') AS buyer, COALESCE(o.quantity, 0) AS quantity "+
				"FROM sale_groups g LEFT JOIN orders o ON o.group_id = g.id AND o.status IN ? "+
				"WHERE g.activity_id = ? ORDER BY g.id", holding, activityID).Scan(&f.Seats).Error; err != nil {
				return err
			}
		}
		for i := 0; i < len(ids); i += 1000 {
			var found []string
			if err := tx.Model(&Order{}).Where("id IN ?", ids[i:min(i+1000, len(ids))]).Pluck("id", &found).Error; err != nil {
				return err
			}
			for _, id := range found {
				f.Stored[id] = true
			}
		}
		return nil
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return RebuildFacts{}, fmt.Errorf("rebuild facts of activity %d: %w", activityID, err)
	}
	return f, nil
}
