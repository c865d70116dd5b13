package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/internal/outbox"
	"seckill/internal/stock"
)

// NewOrder is an order Redis accepted, on its way into MySQL.
type NewOrder struct {
	Order
	// Limit is the per-user limit the reservation was checked against. MySQL checks the
	// user's units against it, so lowering a sale's limit never fails orders taken before.
	Limit int
	// Bucket is the sale's bucket that held the order in Redis, and Gen the generation
	// of that bucket the worker's claim of the order reached; the activity's redis_gen
	// (bucket 0) or activity_buckets (the others) keeps the highest.
	Bucket int
	Gen    int64
	// Epoch is the epoch of the sale's Redis state the order was claimed in (or adopted
	// into); an order of an older epoch than the activity's is refused (ErrClaimedBeforeRebuild).
	Epoch int64
	// ParticipationCap is the cap on the buyer's orders in the sale it was checked
	// against (0: none); MySQL checks it too.
	ParticipationCap int
	// GroupSize and GroupExpiresAt describe the order's group (Order.GroupID) as Redis
	// opened it, so MySQL can record the group with its first stored seat.
	GroupSize      int
	GroupExpiresAt time.Time
	// Traceparent is the trace of the worker's span of the order ("" for none), which
	// its order.created event carries on to the webhook's delivery.
	Traceparent string
}

// RowOf is the row MySQL stores for a queued order q, with what its guards check it
// against: what the worker writes, and what the API shows of q until then (its status
// left to the caller).
func RowOf(q stock.QueuedOrder) NewOrder {
	n := NewOrder{Limit: q.Limit, ParticipationCap: q.ParticipationCap, Order: Order{ID: q.OrderID,
		ActivityID: q.ActivityID, Buyer: q.Buyer, Quantity: q.Quantity, AmountCents: q.AmountCents,
		CreatedAt: q.CreatedAt, ExpiresAt: q.ExpiresAt}}
	if q.Group != "" {
		g := q.Group
		n.GroupID, n.GroupSize, n.GroupExpiresAt = &g, q.GroupSize, q.GroupExpiresAt
	}
	if q.IdempotencyKey != "" {
		key, fp := q.IdempotencyKey, q.Fingerprint
		n.IdempotencyKey, n.RequestFingerprint = &key, &fp
	}
	if i, ok := q.Variant.Index(); ok {
		n.VariantIndex = &i // the store names it (variant) from the sale's variants
	}
	n.Offered, n.EarlyAccess = q.Offered, q.EarlyAccess
	return n
}

// Outcome is what PersistBatch did with one order.
type Outcome struct {
	// Status is the order's status in MySQL: created for a new order, failed for one
	// MySQL refused, or whatever an order already stored has.
	Status string
	// Reason says why a failed order was refused.
	Reason string
	// Existed is true when the order was already stored before this call.
	Existed bool
}

// ErrClaimedBeforeRebuild is a batch with orders claimed in a Redis state of their sale
// that a rebuild has replaced since (activities.redis_epoch went past the claim's): the
// rebuild read MySQL without them, so they are claimed again, or adopted, on the
// rebuilt state before they are written. Nothing of the batch is written.
var ErrClaimedBeforeRebuild = errors.New("orders claimed in Redis before their sale was rebuilt")

// guardError is a batch MySQL refused: the stock or a user's limit would be exceeded.
type guardError struct{ reason string }

func (e *guardError) Error() string { return e.reason }

// PersistBatch writes orders in one transaction and returns each order's outcome by id.
// The same transaction records their events (internal/outbox): order.created for each
// created order, group.completed and order.created for the group's earlier orders when
// a seat fills a group, order.failed for each order stored failed.
// It is idempotent: an order already stored is left as it is and reported with
// Existed. In the same transaction it adds the units to activities.sold, guarded by
// stock_total, and the units and orders to user_purchases, guarded by each order's
// Limit and ParticipationCap. An order of a group takes a seat in sale_groups, guarded
// by the group's size: it is stored grouping, and the seat that fills the group turns
// every order of it created, their pay windows starting then. When a guard
// refuses the batch, the orders are written one by one, oldest first, and each one the
// guard refuses is stored as failed with a reason and counts nowhere. An order's pay
// window (its ExpiresAt - CreatedAt as queued) starts when it becomes payable: when it
// is stored created, or when its group fills; the time it waited in the queue (behind
// a MySQL outage, say) does not count against it. The window as set is kept
// (WindowStartsAt, WindowEndsAt), and ExpiresAt shows the deadline in force: the time
// MySQL outages took from the window (w) added.
func (s *Batches) PersistBatch(ctx context.Context, orders []NewOrder, w Windows) (map[string]Outcome, error) {
	orders = uniqueByID(orders)
	out, err := s.persistRetrying(ctx, orders, w)
	var guard *guardError
	switch {
	case err == nil:
		return out, nil
	case !errors.As(err, &guard):
		return nil, err
	}
	// The guards come before the epoch in the transaction: a batch claimed before its
	// sale's rebuild is refused as such rather than stored failed by them.
	if err := s.claimedBeforeRebuild(ctx, orders); err != nil {
		return nil, err
	}
	if len(orders) == 1 {
		return s.persistFailed(ctx, orders[0], guard.reason)
	}
	orders = slices.Clone(orders) // the caller's, unsorted
	sort.SliceStable(orders, func(i, j int) bool { return orders[i].CreatedAt.Before(orders[j].CreatedAt) })
	out = make(map[string]Outcome, len(orders))
	for _, o := range orders {
		one, err := s.PersistBatch(ctx, []NewOrder{o}, w)
		if err != nil {
			return nil, err
		}
		out[o.ID] = one[o.ID]
	}
	return out, nil
}

// claimedBeforeRebuild returns ErrClaimedBeforeRebuild when one of orders was claimed in
// an epoch older than its activity's redis_epoch.
func (s *Batches) claimedBeforeRebuild(ctx context.Context, orders []NewOrder) error {
	claimed := lowestEpochs(orders)
	ids := make([]int64, 0, len(claimed))
	for id := range claimed {
		ids = append(ids, id)
	}
	var rows []struct{ ID, RedisEpoch int64 }
	if err := s.db.WithContext(ctx).Model(&Activity{}).Select("id", "redis_epoch").Where("id IN ?", ids).
		Find(&rows).Error; err != nil {
		return fmt.Errorf("read the sales' epochs: %w", err)
	}
	for _, r := range rows {
		if err := staleClaim(r.ID, claimed[r.ID], r.RedisEpoch); err != nil {
			return err
		}
	}
	return nil
}

// lowestEpochs returns, by activity, the lowest epoch orders were claimed in.
func lowestEpochs(orders []NewOrder) map[int64]int64 {
	out := map[int64]int64{}
	for _, o := range orders {
		if e, ok := out[o.ActivityID]; !ok || o.Epoch < e {
			out[o.ActivityID] = o.Epoch
		}
	}
	return out
}

// staleClaim is ErrClaimedBeforeRebuild for orders of an activity claimed in epoch
// claimed when the activity's is now, if now is the later; else nil.
func staleClaim(activityID, claimed, now int64) error {
	if now > claimed {
		return fmt.Errorf("activity %d, epoch %d claimed, %d now: %w", activityID, claimed, now, ErrClaimedBeforeRebuild)
	}
	return nil
}

// persistRetrying writes orders in one transaction, first as if none of them were
// stored before (the common case, which then reads no order first), and when that meets
// an order stored before (its duplicate key) or a guard (which an order stored before,
// counted again, can trip), again reading first which ones are stored, as often as
// retryable says.
func (s *Batches) persistRetrying(ctx context.Context, orders []NewOrder, w Windows) (map[string]Outcome, error) {
	out, err := s.persist(ctx, orders, w, false)
	var guard *guardError
	if err == nil || !retryable(err) && !errors.As(err, &guard) {
		return out, err
	}
	err = retrying(ctx, 6, retryable, func() (err error) {
		out, err = s.persist(ctx, orders, w, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// persist is one attempt of the batch transaction; with stored, it first reads which
// orders are stored already, and leaves them as they are. Rows are touched in a fixed
// order (user_purchases by activity and user, then activities by id, last so the hot
// sale row is locked for the shortest time) so concurrent batches cannot deadlock.
func (s *Batches) persist(ctx context.Context, orders []NewOrder, w Windows, stored bool) (map[string]Outcome, error) {
	out := make(map[string]Outcome, len(orders))
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		clear(out)
		if stored {
			if err := storedOutcomes(tx, orders, out); err != nil {
				return err
			}
		}
		fresh := make([]NewOrder, 0, len(orders))
		held := make([]userUnits, 0, len(orders))
		now := s.now()
		for _, o := range orders {
			if _, ok := out[o.ID]; ok {
				continue
			}
			o.Status, o.FailureReason, o.PersistedAt = StatusCreated, nil, now
			if o.GroupID == nil { // payable from now: its pay window starts now
				o.setWindow(now, now.Add(o.ExpiresAt.Sub(o.CreatedAt)), w, now)
			}
			fresh = append(fresh, o)
			held = append(held, userUnits{o.ActivityID, o.Buyer, int64(o.Quantity), 1, o.Limit, o.ParticipationCap})
		}
		if len(fresh) == 0 {
			return nil
		}
		if err := addUserUnits(tx, held); err != nil {
			return err
		}
		events, err := s.takeSeats(tx, fresh, now, w)
		if err != nil {
			return err
		}
		if err := nameVariants(tx, fresh); err != nil {
			return err
		}
		rows := make([]Order, len(fresh))
		events = slices.Grow(events, len(fresh))
		for i, o := range fresh {
			out[o.ID] = Outcome{Status: o.Status}
			rows[i] = o.Order
			if o.Status == StatusCreated {
				e := orderEvent(s.views, outbox.OrderCreated, o.Order, now)
				e.Trace = o.Traceparent
				events = append(events, e)
			}
		}
		if err := insertOrders(tx, rows); err != nil {
			return err
		}
		if err := record(tx, events...); err != nil {
			return err
		}
		if err := addSold(tx, fresh); err != nil {
			return err
		}
		return addVariantSold(tx, rows)
	})
	return out, err
}

// storedOutcomes puts in out the outcome of each of orders that is stored already.
func storedOutcomes(tx *gorm.DB, orders []NewOrder, out map[string]Outcome) error {
	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	var stored []Order
	if err := tx.Select("id", "status", "failure_reason").Where("id IN ?", ids).Find(&stored).Error; err != nil {
		return fmt.Errorf("find stored orders: %w", err)
	}
	for _, o := range stored {
		out[o.ID] = storedOutcome(o)
	}
	return nil
}

// insertOrders inserts new orders in one statement, written out here (rowsStatement)
// rather than by GORM's reflection over every field: a new order has no payment,
// cancellation, refund or return yet, and such a row is refused.
func insertOrders(tx *gorm.DB, rows []Order) error {
	s := newRowsStatement(insertOrdersHead, len(insertOrdersHead)+len(rows)*orderRowSize, orderArgs*len(rows))
	for i := range rows {
		o := &rows[i]
		if o.PaidAt != nil || o.PaidBy != nil || o.CancelledAt != nil || o.RefundedAt != nil || o.Restock != nil {
			return fmt.Errorf("insert orders: order %s is not new", o.ID)
		}
		s.row()
		s.str(o.ID)
		s.int(o.ActivityID)
		s.str(string(o.Buyer))
		if n, ok := o.Buyer.UserID(); ok {
			s.int(n)
		} else {
			s.null()
		}
		s.int(int64(o.Quantity))
		s.int(o.AmountCents)
		s.str(o.Status)
		s.strOrNull(o.FailureReason)
		s.time(o.CreatedAt)
		s.time(o.ExpiresAt)
		s.timeOrNull(o.WindowStartsAt)
		s.timeOrNull(o.WindowEndsAt)
		s.time(o.PersistedAt)
		s.strOrNull(o.GroupID)
		s.strOrNull(o.Variant)
		s.intOrNull(o.VariantIndex)
		s.bool(o.Offered)
		s.bool(o.EarlyAccess)
		s.strOrNull(o.IdempotencyKey)
		s.strOrNull(o.RequestFingerprint)
		s.endRow()
	}
	if err := s.exec(tx).Error; err != nil {
		return fmt.Errorf("insert orders: %w", err)
	}
	return nil
}

// execBuilt runs query, whose placeholders ('?' only) take args in order, as tx.Exec
// does, GORM's callbacks and all (the schema gate, tracing, the log of a failure), but
// without GORM building it again a character and an argument at a time
// (clause.Expr.Build): for the batch inserts of the worker, whose statements are built
// here, that was about a tenth of the worker's CPU.
func execBuilt(tx *gorm.DB, query string, args []any) *gorm.DB {
	t := tx.Session(&gorm.Session{Context: tx.Statement.Context}) // a Statement of its own
	t.Statement.SQL.Reset()
	t.Statement.SQL.Grow(len(query))
	t.Statement.SQL.WriteString(query)
	t.Statement.Vars = args
	return t.Callback().Raw().Execute(t)
}

// The statement of insertOrders: its head, the columns it writes, and about the text
// and the arguments (its times: rowsStatement) of one row.
const (
	insertOrdersHead = "INSERT INTO orders (id, activity_id, buyer, user_id, quantity, amount_cents, status, " +
		"failure_reason, created_at, expires_at, window_starts_at, window_ends_at, persisted_at, group_id, variant, " +
		"variant_index, offered, early_access, idempotency_key, request_fingerprint) VALUES "
	orderColumns = 20
	orderRowSize = 256
	orderArgs    = 5
)

// takeSeats records the seats of the group orders among orders (in place: their
// Status and ExpiresAt) in sale_groups, whose CHECK refuses a seat past the group's
// size. A group's first stored seat creates its row. Orders of a group that is not full
// are stored grouping, until its window ends (ExpiresAt); the seat that fills it marks
// it complete and turns its grouping orders created, their pay window starting now. It
// returns the events of the groups completed and of their orders stored before.
func (s *Batches) takeSeats(tx *gorm.DB, orders []NewOrder, now time.Time, w Windows) ([]outbox.Event, error) {
	seats := map[string]int{}
	var ids []string
	first := map[string]NewOrder{}
	for _, o := range orders {
		if o.GroupID == nil {
			continue
		}
		g := *o.GroupID
		if _, ok := seats[g]; !ok {
			ids = append(ids, g)
			first[g] = o
		}
		seats[g]++
	}
	if len(ids) == 0 {
		return nil, nil
	}
	sort.Strings(ids) // rows locked in one order, so concurrent batches cannot deadlock
	for _, g := range ids {
		o := first[g]
		err := tx.Exec("INSERT INTO sale_groups (id, activity_id, size, members, status, expires_at, created_at) "+
			"VALUES (?, ?, ?, ?, 'open', ?, ?) ON DUPLICATE KEY UPDATE members = members + VALUES(members)",
			g, o.ActivityID, o.GroupSize, seats[g], o.GroupExpiresAt, now).Error
		if _, full := checkRefused(err); full { // CHECK sale_groups_members
			return nil, &guardError{"no seat left in the group in MySQL"}
		}
		if err != nil {
			return nil, fmt.Errorf("take group seats: %w", err)
		}
	}
	var groups []Group
	if err := tx.Raw("SELECT id, activity_id, size, members, status, expires_at FROM sale_groups WHERE id IN ?", ids).
		Scan(&groups).Error; err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	complete := map[string]*Group{}
	for i, g := range groups {
		switch {
		case g.Status == groupFailed:
			return nil, &guardError{"the group failed in MySQL"}
		case g.Members < g.Size:
			continue
		}
		groups[i].Status = groupComplete
		complete[g.ID] = &groups[i]
		if err := tx.Exec("UPDATE sale_groups SET status = 'complete', completed_at = ? WHERE id = ? AND status = 'open'",
			now, g.ID).Error; err != nil {
			return nil, fmt.Errorf("complete group: %w", err)
		}
	}
	var events []outbox.Event
	started := map[string]bool{}
	for i := range orders {
		o := &orders[i]
		if o.GroupID == nil {
			continue
		}
		g := complete[*o.GroupID]
		if g == nil {
			o.Status, o.ExpiresAt = StatusGrouping, o.GroupExpiresAt
			continue
		}
		payWindow := o.ExpiresAt.Sub(o.CreatedAt)
		o.Status = StatusCreated
		o.setWindow(now, now.Add(payWindow), w, now)
		if started[g.ID] {
			continue
		}
		started[g.ID] = true
		waiting, err := startPayWindows(tx, g.ID, o.Order)
		if err != nil {
			return nil, err
		}
		for _, w := range waiting {
			events = append(events, orderEvent(s.views, outbox.OrderCreated, w, now))
		}
		events = append(events, groupEvent(s.views, outbox.GroupCompleted, *g, now))
	}
	return events, nil
}

// startPayWindows turns the grouping orders of a group that has just filled created,
// with the pay window of the order that filled it, and returns them as they are now.
func startPayWindows(tx *gorm.DB, groupID string, filling Order) ([]Order, error) {
	var waiting []Order
	if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("group_id = ? AND status = ?", groupID, StatusGrouping).
		Order("id").Find(&waiting).Error; err != nil {
		return nil, fmt.Errorf("read group orders: %w", err)
	}
	if len(waiting) == 0 {
		return nil, nil
	}
	if err := tx.Exec("UPDATE orders SET status = ?, expires_at = ?, window_starts_at = ?, window_ends_at = ? "+
		"WHERE group_id = ? AND status = ?", StatusCreated, filling.ExpiresAt, filling.WindowStartsAt, filling.WindowEndsAt,
		groupID, StatusGrouping).Error; err != nil {
		return nil, fmt.Errorf("complete group orders: %w", err)
	}
	for i := range waiting {
		waiting[i].Status, waiting[i].ExpiresAt = StatusCreated, filling.ExpiresAt
		waiting[i].WindowStartsAt, waiting[i].WindowEndsAt = filling.WindowStartsAt, filling.WindowEndsAt
	}
	return waiting, nil
}

// Statuses of a group: failed when its window passed unfilled, complete when it filled.
const (
	groupFailed   = "failed"
	groupComplete = "complete"
)

// addSold adds the orders' units to their activities, refusing to pass stock_total,
// and raises each activity's redis_gen (activity_buckets' for buckets 1 and up) to the
// orders' highest Gen. It refuses the orders with ErrClaimedBeforeRebuild when one was
// claimed in an epoch older than its activity's redis_epoch: the UPDATE reads the row
// as last committed, and a rebuild raises the epoch on that row before it reads MySQL,
// so an order the rebuild did not see cannot be written after it.
func addSold(tx *gorm.DB, orders []NewOrder) error {
	type bucket struct {
		act int64
		n   int
	}
	units, gens, epochs := map[int64]int64{}, map[bucket]int64{}, lowestEpochs(orders)
	var acts []int64
	var others []bucket
	for _, o := range orders {
		if _, ok := units[o.ActivityID]; !ok {
			acts = append(acts, o.ActivityID)
		}
		units[o.ActivityID] += int64(o.Quantity)
		b := bucket{o.ActivityID, o.Bucket}
		if _, ok := gens[b]; !ok && b.n > 0 {
			others = append(others, b)
		}
		gens[b] = max(gens[b], o.Gen)
	}
	sort.Slice(acts, func(i, j int) bool { return acts[i] < acts[j] })
	for _, id := range acts {
		res := tx.Exec("UPDATE activities SET sold = sold + ?, redis_gen = GREATEST(redis_gen, ?) "+
			"WHERE id = ? AND sold + ? <= stock_total AND redis_epoch <= ?", units[id], gens[bucket{id, 0}], id, units[id], epochs[id])
		if res.Error != nil {
			return fmt.Errorf("add sold units: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			var epoch int64
			if err := tx.Raw("SELECT redis_epoch FROM activities WHERE id = ? FOR UPDATE", id).Scan(&epoch).Error; err != nil {
				return fmt.Errorf("read the sale's epoch: %w", err)
			}
			if err := staleClaim(id, epochs[id], epoch); err != nil {
				return err
			}
			return &guardError{"sold out in MySQL: no stock left for this order"}
		}
	}
	sort.Slice(others, func(i, j int) bool {
		return others[i].act < others[j].act || others[i].act == others[j].act && others[i].n < others[j].n
	})
	for _, b := range others { // under the activity's row lock, taken above
		err := tx.Exec("INSERT INTO activity_buckets (activity_id, bucket, redis_gen) VALUES (?, ?, ?) "+
			"ON DUPLICATE KEY UPDATE redis_gen = GREATEST(redis_gen, VALUES(redis_gen))", b.act, b.n, gens[b]).Error
		if err != nil {
			return fmt.Errorf("record bucket generation: %w", err)
		}
	}
	return nil
}

// StoreFailed stores an order as failed with reason, counting it nowhere (an order
// whose units could not be had); an order stored before is left as it is.
func (s *Batches) StoreFailed(ctx context.Context, o NewOrder, reason string) (Outcome, error) {
	out, err := s.persistFailed(ctx, o, reason)
	return out[o.ID], err
}

// persistFailed stores an order MySQL refused as failed, counting it nowhere, and its
// order.failed event.
func (s *Batches) persistFailed(ctx context.Context, o NewOrder, reason string) (map[string]Outcome, error) {
	row := o.Order
	row.Status, row.FailureReason, row.PersistedAt = StatusFailed, &reason, s.now()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		named := []NewOrder{{Order: row}}
		if err := nameVariants(tx, named); err != nil {
			var guard *guardError
			if !errors.As(err, &guard) {
				return err
			}
			named[0].VariantIndex = nil // a variant the sale does not have: stored without
		}
		row = named[0].Order
		if err := insertOrders(tx, []Order{row}); err != nil {
			return err
		}
		return record(tx, orderEvent(s.views, outbox.OrderFailed, row, row.PersistedAt))
	})
	if retryable(err) { // stored meanwhile by another delivery of the same task
		stored, gerr := (&Orders{s.conn}).GetOrder(ctx, o.ID)
		if gerr != nil {
			return nil, gerr
		}
		return map[string]Outcome{o.ID: storedOutcome(stored)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("insert failed order: %w", err)
	}
	return map[string]Outcome{o.ID: {Status: StatusFailed, Reason: reason}}, nil
}

// setWindow sets the order's pay window as set, from start to end, and its deadline in
// force at now.
func (o *Order) setWindow(start, end time.Time, w Windows, now time.Time) {
	o.WindowStartsAt, o.WindowEndsAt = &start, &end
	o.ExpiresAt = w.Deadline(start, end, now)
}

// storedOutcome is the outcome of an order found already stored.
func storedOutcome(o Order) Outcome {
	return Outcome{Status: o.Status, Reason: deref(o.FailureReason), Existed: true}
}

// uniqueByID returns orders without the repeats of an id, the first kept: orders
// itself when no id repeats, else a copy.
func uniqueByID(orders []NewOrder) []NewOrder {
	seen := make(map[string]struct{}, len(orders))
	var out []NewOrder // nil while no id repeats
	for i, o := range orders {
		if _, repeat := seen[o.ID]; !repeat {
			seen[o.ID] = struct{}{}
			if out != nil {
				out = append(out, o)
			}
			continue
		}
		if out == nil {
			out = append(make([]NewOrder, 0, len(orders)), orders[:i]...)
		}
	}
	if out == nil {
		return orders
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
