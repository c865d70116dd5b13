// Package sale is what the API does: it runs sales for admins and purchases for
// buyers over the Redis stock (internal/stock), the order queue (internal/task) and
// MySQL (internal/store). Handlers turn its results and errors into HTTP. Its work is in
// parts, one per kind (Service: Catalog, Purchases, Groups, Orders, Waitlists,
// Variants), that share one base of clients and settings.
package sale

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"

	"seckill/internal/buyer"
	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/snapshot"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/replicas"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/internal/upkeep"
	"seckill/lock"
)

// Errors of the service besides those of internal/stock and internal/store.
var (
	// ErrUnavailable means Redis or MySQL could not be reached; nothing was taken.
	ErrUnavailable = errors.New("a storage server is unavailable")
	// ErrNotFound means no such activity or order, or an order of another user. It is
	// the store's own, so a miss in MySQL needs no translating.
	ErrNotFound = store.ErrNotFound
	// ErrArchived means the sale is archived: it is over, MySQL answers for it, and it
	// can change no more.
	ErrArchived = store.ErrArchived
	// ErrPaymentByShop is a buyer marking an order paid where payments are the shop's to
	// confirm (BuyerPays false).
	ErrPaymentByShop = errors.New("payments are confirmed by the shop: pay at the shop's checkout")
)

// FieldError is a request value out of range, named by its JSON field.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Message }

// Enqueuer puts orders on the queue to MySQL.
type Enqueuer interface {
	EnqueueBatch(ctx context.Context, orders []stock.QueuedOrder) error
}

// Locker waits for the release of the per-user locks the reserve script takes (stock
// releases them: reserve.Reserver.ReleaseUserLocks).
type Locker interface {
	WaitRelease(ctx context.Context, key string) error
}

// ReplicaConfirmer confirms that replicas of the master of a sale's bucket hold a
// reservation (orderID "" for the master's writes so far) before the purchase is
// answered.
type ReplicaConfirmer interface {
	Confirm(ctx context.Context, b stock.Bucket, orderID string) error
}

// Outages reads the MySQL outages as the shared record holds them now.
type Outages interface {
	Read(ctx context.Context) (outage.Outages, error)
}

var (
	_ Outages          = (*outage.Record)(nil)
	_ Enqueuer         = (*task.Enqueuer)(nil)
	_ Locker           = (*lock.Client)(nil)
	_ ReplicaConfirmer = (*replicas.Replicas)(nil)
)

// Service runs sales and purchases: it holds the parts of the service, each for one
// kind of work, and is where they are set up (clocks, codes, metrics, shutdown).
// Callers take the parts they use.
type Service struct {
	// Catalog runs the sales for admins and the public reads of them (activity.go,
	// ledger.go), and tells a sale Redis lacks (MissingSale).
	Catalog *Catalog
	// Purchases takes units from stock and queues their orders (purchase.go, commit.go).
	Purchases *Purchases
	// Groups runs a group-buy's seats and reads its groups (group.go).
	Groups *Groups
	// Orders reads, pays, cancels and refunds the orders after their purchase
	// (orders.go, view.go).
	Orders *Orders
	// Waitlists keeps the buyers waiting for a sold-out sale's returns (waitlist.go).
	Waitlists *Waitlists
	// Variants finds the variants a purchase or a waitlist names (variants.go).
	Variants *Variants
	// Settings are the parts' settings, one for all; set them before the first call.
	*Settings
	base *base
}

// base is what the parts of the service share, by pointer: the storage clients, the
// clock, the settings, and the other parts. It has fields only, so a part that embeds
// it gains no method.
type base struct {
	// store is MySQL's parts: the service reads Activities and Orders, and its
	// Rebuilder (rebuild) Upkeep.
	store    *store.Store
	stock    *stock.Stock
	reserver *reserve.Reserver
	sales    *lifecycle.Sales
	groups   *group.Groups
	settle   *settle.Settler
	orders   *order.Lifecycle
	outages  Outages
	queue    Enqueuer
	locks    Locker
	now      func() time.Time
	metrics  *metrics
	rebuild  *upkeep.Rebuilder
	// archived are the sales this process found archived.
	archived archivedSales
	// judgeByNow judges sale windows by now instead of Redis' clock (SetClock).
	judgeByNow bool
	// codes are the sales' access codes (SetCodes); nil for none.
	codes CodeKeeper

	// The parts, for the calls of one to another.
	catalog    *Catalog
	purchases  *Purchases
	groupBuys  *Groups
	orderViews *Orders
	variants   *Variants

	*Settings
}

// Settings are the service's settings, which its parts share.
type Settings struct {
	// LockWait is how long a purchase waits for the same user's purchase in flight.
	LockWait time.Duration
	// LockTTL bounds how long a crashed API can keep a user's lock.
	LockTTL time.Duration
	// IOTimeout bounds each storage call of a purchase.
	IOTimeout time.Duration
	// UserRate is each user's allowance of purchase attempts per second in a sale, over
	// all API instances (SECKILL_RATE_USER; bursts of twice that), kept by the reserve
	// script on Redis' clock; 0 is no limit.
	UserRate float64
	// Replicas, when set, must confirm a reservation before its purchase is answered
	// (SECKILL_REDIS_MIN_REPLICAS); a purchase it cannot confirm answers ErrUnavailable.
	Replicas ReplicaConfirmer
	// BuyerPays lets a buyer mark their own order paid, a simulated payment
	// (SECKILL_BUYER_PAYS); otherwise only the shop's back end and admins confirm
	// payments, and a buyer's Pay is ErrPaymentByShop.
	BuyerPays bool
	// Checkout is where a buyer pays a created order (SECKILL_CHECKOUT_URL); "" for none.
	Checkout Checkout
	// ListMargin is how far behind now the pages of a sale's orders stop (SaleOrders):
	// longer than LockWait (a purchase's id is minted before it waits for the buyer's
	// lock) and than the API instances' clocks are apart.
	ListMargin time.Duration
}

// Catalog runs the sales for admins (create, patch, stats, ledger, rebuild) and the
// public reads of them, and answers for a sale Redis lacks (MissingSale).
type Catalog struct {
	*base
	list *snapshot.Value[[]Activity] // the public list of sales (PublicActivities)
	// listRows reads its sales from MySQL, and keeps those it read last.
	listRows *store.ActivityList
	// newerProbe bounds the MySQL reads of sales newer than the list (listed).
	newerProbe probe
}

// Purchases takes units from stock for a purchase and queues its order for MySQL,
// committing the orders of many purchases together (commit.go).
type Purchases struct {
	*base
	commits committer
}

// Groups runs the seats of a group-buy sale (purchases too) and reads its groups.
type Groups struct{ *base }

// Orders reads the orders, queued or in MySQL, with the deadlines in force, and pays,
// cancels and refunds them.
type Orders struct{ *base }

// Waitlists keeps the buyers who wait for a sold-out sale's returns.
type Waitlists struct{ *base }

// New returns a Service. Its answers show the deadlines of pay windows as MySQL
// outages extend them (outages).
func New(st *store.Store, sk *stock.Stock, orders *order.Lifecycle, outages Outages, q Enqueuer, locks Locker) *Service {
	b := &base{store: st, stock: sk, reserver: reserve.New(sk), sales: lifecycle.New(sk), groups: group.New(sk), settle: settle.New(sk), orders: orders, outages: outages, queue: q, locks: locks, now: time.Now,
		Settings: &Settings{LockWait: 500 * time.Millisecond, LockTTL: 5 * time.Second, IOTimeout: 2 * time.Second, ListMargin: 10 * time.Second},
		rebuild:  upkeep.NewRebuilder(st.Upkeep, st.Activities, sk), archived: archivedSales{stock: sk}}
	b.catalog = &Catalog{base: b, list: snapshot.New[[]Activity]("public sales", CatalogAge),
		listRows: st.Activities.NewList()}
	b.purchases = &Purchases{base: b}
	b.purchases.commits.flush = b.purchases.commitBatch
	b.groupBuys, b.orderViews, b.variants = &Groups{b}, &Orders{b}, &Variants{base: b}
	return &Service{Catalog: b.catalog, Purchases: b.purchases, Groups: b.groupBuys, Orders: b.orderViews,
		Waitlists: &Waitlists{b}, Variants: b.variants, Settings: b.Settings, base: b}
}

// Close waits for the commits under way, up to ctx's end: a purchase is answered before
// its order is enqueued and its user lock released (commit.go). Call it once the HTTP
// server has shut down, so the acknowledged orders are enqueued now rather than by the
// worker's repair pass, and no lock is left to expire on its own. A purchase that
// arrives after Close commits before it is answered. Close returns how many purchases
// were still waiting for their commit when ctx ended (their orders are safe in Redis).
func (s *Service) Close(ctx context.Context) int { return s.Purchases.commits.close(ctx) }

// SetClock replaces the clock of the service and of its order lifecycle, and judges
// sale windows by it instead of Redis' clock (tests).
func (s *Service) SetClock(now func() time.Time) {
	s.SetProcessClock(now)
	s.base.judgeByNow = true
}

// SetProcessClock replaces this process's own clock (the times orders record, the
// status an activity shows) while sale windows stay judged by Redis' clock, one for
// every instance: a process whose clock runs ahead still never sells early.
func (s *Service) SetProcessClock(now func() time.Time) {
	s.base.now = now
	s.base.orders.SetClock(now)
	s.base.stock.SetClock(now)
}

// Caller is who makes a request: a buyer, an admin, or a shop's back end (Service),
// which reads, pays, cancels and refunds any buyer's orders and buys none.
type Caller struct {
	Buyer   buyer.ID
	Admin   bool
	Service bool
}

// actsOnAnyOrder reports whether the caller may read, pay, cancel or refund any buyer's
// order: a shop's back end, or an admin (the contract's confirmations from the shop).
func (c Caller) actsOnAnyOrder() bool { return c.Admin || c.Service }

// reads reports whether the caller may read an order of the buyer: the buyer, an admin
// or the shop's back end. A service token's sub is not a buyer's, whatever it is.
func (c Caller) reads(b buyer.ID) bool { return c.actsOnAnyOrder() || c.Buyer == b }

// access is the caller as the store checks who acts on an order.
func (c Caller) access() store.Access {
	return store.Access{Buyer: c.Buyer, Admin: c.Admin, Service: c.Service}
}

// newOrderID returns an unguessable order id: a ULID (time + 80 random bits from
// crypto/rand) followed by the activity id, so a queued order can be found in Redis.
// Clients treat it as opaque.
func newOrderID(activityID int64, now time.Time) string {
	return ulid.MustNew(ulid.Timestamp(now), rand.Reader).String() + strconv.FormatInt(activityID, 10)
}

// ActivityOf returns the activity id inside an order's or a group's id; false unless
// the id is exactly as issued: its ULID in upper case (ULIDs parse in either case, and
// MySQL compares ids without regard to case) and the activity id in canonical decimal
// (ParseID).
func ActivityOf(orderID string) (int64, bool) {
	if len(orderID) <= ulid.EncodedSize || len(orderID) > 48 {
		return 0, false
	}
	stamp := orderID[:ulid.EncodedSize]
	for i := range len(stamp) {
		if stamp[i] >= 'a' && stamp[i] <= 'z' {
			return 0, false
		}
	}
	if _, err := ulid.ParseStrict(stamp); err != nil {
		return 0, false
	}
	return ParseID(orderID[ulid.EncodedSize:])
}

// ParseID reads an activity id as the API writes it: a decimal from 1 to 2^63-1
// without sign, leading zero or anything else; false for any other text ("+1", "01").
// Each id has one spelling, so a path that names a sale means it in one way only.
func ParseID(s string) (int64, bool) {
	if s == "" || s[0] == '0' || len(s) > 19 {
		return 0, false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return id, true
}
