package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"

	"seckill/internal/buyer"
)

// What a buyer holds in an activity, and the per-user rule over it, are kept in MySQL
// here only, on their own: the same rule as Redis's (internal/stock's holdings.go), so
// that neither alone can let a buyer past the limit. user_purchases keeps each buyer's
// units and orders (participations) in created, grouping and paid orders: PersistBatch
// adds to it under the rule (addUserUnits), a cancellation takes back (takeBackFromUsers),
// and a sale's Redis state is rebuilt from the orders themselves (Holdings).

type userUnits struct {
	activityID    int64
	buyer         buyer.ID
	units, orders int64
	limit, cap    int
}

// buyerOf is a buyer of an activity: the key of user_purchases.
type buyerOf struct {
	activityID int64
	buyer      buyer.ID
}

// overLimit is the per-user rule over a buyer's totals after their new orders, under
// the per-user limit and the cap on participations (0: none): the refusal, or "".
func overLimit(units, parts int64, limit, participations int) string {
	switch {
	case units > int64(limit):
		return fmt.Sprintf("over the per-user limit of %d in MySQL", limit)
	case participations > 0 && parts > int64(participations):
		return fmt.Sprintf("over the cap of %d participations in MySQL", participations)
	}
	return ""
}

// byBuyer sums rows by buyer (activity, buyer), each buyer's limit and cap the highest
// of their rows', and returns the buyers in the order the worker's batches lock their
// rows (activity, then buyer by its bytes, as the primary key orders them).
func byBuyer(rows []userUnits) (map[buyerOf]*userUnits, []buyerOf) {
	sum := map[buyerOf]*userUnits{}
	for _, r := range rows {
		k := buyerOf{r.activityID, r.buyer}
		if u, ok := sum[k]; ok {
			u.units += r.units
			u.orders += r.orders
			u.limit = max(u.limit, r.limit)
			u.cap = max(u.cap, r.cap)
			continue
		}
		r := r
		sum[k] = &r
	}
	return sum, slices.SortedFunc(maps.Keys(sum), func(a, b buyerOf) int {
		return cmp.Or(cmp.Compare(a.activityID, b.activityID), strings.Compare(string(a.buyer), string(b.buyer)))
	})
}

// changeUserPurchases adds (op "+") or takes back (op "-") the buyers' units and orders
// in user_purchases, in one statement, rows in keys' order; a buyer without a row gets
// one. It returns the rows affected, as MySQL counts them: 1 a row inserted, 2 updated.
func changeUserPurchases(tx *gorm.DB, sum map[buyerOf]*userUnits, keys []buyerOf, op string) (int64, error) {
	values := make([]string, len(keys))
	args := make([]any, 0, 4*len(keys))
	for i, k := range keys {
		values[i] = "(?, ?, ?, ?)"
		args = append(args, k.activityID, k.buyer, sum[k].units, sum[k].orders)
	}
	res := tx.Exec("INSERT INTO user_purchases (activity_id, buyer, units, participations) VALUES "+
		strings.Join(values, ", ")+" ON DUPLICATE KEY UPDATE units = units "+op+" VALUES(units), "+
		"participations = participations "+op+" VALUES(participations)", args...)
	return res.RowsAffected, res.Error
}

// addUserUnits adds units and orders to user_purchases and refuses when a user would
// hold more than the limit, or more orders than the cap on participations, of the
// orders being added.
func addUserUnits(tx *gorm.DB, rows []userUnits) error {
	sum, keys := byBuyer(rows)
	if _, err := changeUserPurchases(tx, sum, keys, "+"); err != nil {
		return fmt.Errorf("add user units: %w", err)
	}
	pairs := make([]string, len(keys))
	pairArgs := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		pairs[i] = "(?, ?)"
		pairArgs = append(pairArgs, k.activityID, k.buyer)
	}
	var now []struct {
		ActivityID            int64
		Buyer                 buyer.ID
		Units, Participations int64
	}
	if err := tx.Raw("SELECT activity_id, buyer, units, participations FROM user_purchases WHERE (activity_id, buyer) IN ("+
		strings.Join(pairs, ", ")+")", pairArgs...).Scan(&now).Error; err != nil {
		return fmt.Errorf("read user units: %w", err)
	}
	for _, n := range now {
		if u := sum[buyerOf{n.ActivityID, n.Buyer}]; u != nil {
			if reason := overLimit(n.Units, n.Participations, u.limit, u.cap); reason != "" {
				return &guardError{reason}
			}
		}
	}
	return nil
}

// takeBackFromUsers takes cancelled orders' units and participations out of their
// buyers' totals, in one statement, rows in the order the worker's batches lock them.
// Every buyer has a row (the order was written with it), so each row is updated (two
// affected rows in MySQL's count); a row that had to be inserted fails the transaction
// rather than pass unseen.
func takeBackFromUsers(tx *gorm.DB, orders []Order) error {
	rows := make([]userUnits, len(orders))
	for i, o := range orders {
		rows[i] = userUnits{activityID: o.ActivityID, buyer: o.Buyer, units: int64(o.Quantity), orders: 1}
	}
	sum, keys := byBuyer(rows)
	affected, err := changeUserPurchases(tx, sum, keys, "-")
	if err != nil {
		return fmt.Errorf("take back user units: %w", err)
	}
	if affected != 2*int64(len(keys)) {
		return fmt.Errorf("take back user units: %d of %d buyers had no totals", 2*int64(len(keys))-affected, len(keys))
	}
	return nil
}

// userHoldings reads what each buyer holds in an activity by user_purchases (units),
// for the ledger, which holds it against Redis's.
func userHoldings(tx *gorm.DB, activityID int64) (map[buyer.ID]int64, error) {
	var users []struct {
		Buyer buyer.ID
		Units int64
	}
	if err := tx.Table("user_purchases").Select("buyer, units").Where("activity_id = ?", activityID).
		Scan(&users).Error; err != nil {
		return nil, err
	}
	held := make(map[buyer.ID]int64, len(users))
	for _, u := range users {
		held[u.Buyer] = u.Units
	}
	return held, nil
}

// Holdings returns, in one query, the units each buyer holds in an activity's orders
// that hold stock in MySQL: created, paid, and cancelled ones whose units are not yet
// back in Redis (return_pending). It is what a sale's Redis state is rebuilt from.
func (s *Store) Holdings(ctx context.Context, activityID int64) (map[buyer.ID]int64, error) {
	units, _, err := holdingsAndOrders(s.db.WithContext(ctx), activityID)
	return units, err
}

// holdingsAndOrders is Holdings with, by buyer, the number of those orders (the buyer's
// participations).
func holdingsAndOrders(db *gorm.DB, activityID int64) (units, orders map[buyer.ID]int64, err error) {
	var rows []struct {
		Buyer         buyer.ID
		Units, Orders int64
	}
	err = db.Model(&Order{}).Select("buyer, SUM(quantity) AS units, COUNT(*) AS orders").
		Where("activity_id = ? AND (status IN ? OR return_pending)", activityID, holding).
		Group("buyer").Scan(&rows).Error
	if err != nil {
		return nil, nil, fmt.Errorf("holdings of activity %d: %w", activityID, err)
	}
	units, orders = make(map[buyer.ID]int64, len(rows)), make(map[buyer.ID]int64, len(rows))
	for _, r := range rows {
		units[r.Buyer], orders[r.Buyer] = r.Units, r.Orders
	}
	return units, orders, nil
}

// holding are the statuses of stored orders that hold units of stock.
var holding = []string{StatusGrouping, StatusCreated, StatusPaid}
