package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
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

// overLimit is the refusal of a batch whose additions to user_purchases the per-user
// rule refused (err, the CHECK user_purchases_within_limit or _within_cap: a buyer's
// units past the per-user limit, or orders past the cap on participations, its orders
// were accepted under), or nil for any other error. A batch of one buyer names that
// buyer's limit or cap.
func overLimit(err error, buyers []userUnits) *guardError {
	refused, ok := checkRefused(err)
	if !ok {
		return nil
	}
	var one *userUnits
	if len(buyers) == 1 {
		one = &buyers[0]
	}
	switch {
	case strings.Contains(refused, "user_purchases_within_cap") && one != nil:
		return &guardError{fmt.Sprintf("over the cap of %d participations in MySQL", one.cap)}
	case strings.Contains(refused, "user_purchases_within_cap"):
		return &guardError{"over a cap on participations in MySQL"}
	case strings.Contains(refused, "user_purchases_within_limit") && one != nil:
		return &guardError{fmt.Sprintf("over the per-user limit of %d in MySQL", one.limit)}
	case strings.Contains(refused, "user_purchases_within_limit"):
		return &guardError{"over a per-user limit in MySQL"}
	}
	return nil
}

// checkRefused tells an error of a row a CHECK constraint refused, and returns its
// message, which names the constraint: MariaDB's error 4025 ("CONSTRAINT `name` failed
// for ...") or MySQL 8's 3819 ("Check constraint 'name' is violated.").
func checkRefused(err error) (string, bool) {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 4025 && me.Number != 3819 {
		return "", false
	}
	return me.Message, true
}

// byBuyer sums rows by buyer (activity, buyer), each buyer's limit and cap the highest
// of their rows', and returns the buyers in the order the worker's batches lock their
// rows (activity, then buyer by its bytes, as the primary key orders them). It sorts
// rows, and sums them in place.
func byBuyer(rows []userUnits) []userUnits {
	slices.SortFunc(rows, func(a, b userUnits) int {
		return cmp.Or(cmp.Compare(a.activityID, b.activityID), strings.Compare(string(a.buyer), string(b.buyer)))
	})
	buyers := rows[:0]
	for _, r := range rows {
		if n := len(buyers); n > 0 && buyers[n-1].activityID == r.activityID && buyers[n-1].buyer == r.buyer {
			u := &buyers[n-1]
			u.units += r.units
			u.orders += r.orders
			u.limit = max(u.limit, r.limit)
			u.cap = max(u.cap, r.cap)
			continue
		}
		buyers = append(buyers, r)
	}
	return buyers
}

// changeUserPurchases adds (op "+") or takes back (op "-") the buyers' units and orders
// in user_purchases, in one statement, rows in their order (byBuyer's); a buyer without
// a row gets one. An addition also writes each buyer's limit and cap, which the table's
// CHECKs hold the new totals to. It returns the rows affected, as MySQL counts them: 1 a
// row inserted, 2 updated.
func changeUserPurchases(tx *gorm.DB, buyers []userUnits, op string) (int64, error) {
	head := "INSERT INTO user_purchases (activity_id, buyer, units, participations) VALUES "
	if op == "+" {
		head = "INSERT INTO user_purchases (activity_id, buyer, units, participations, units_limit, participation_cap) VALUES "
	}
	s := newRowsStatement(head, len(head)+96*len(buyers)+200, 0)
	for _, u := range buyers {
		s.row()
		s.int(u.activityID)
		s.str(string(u.buyer))
		s.int(u.units)
		s.int(u.orders)
		if op == "+" {
			s.int(int64(u.limit))
			s.int(int64(u.cap))
		}
		s.endRow()
	}
	s.write(" ON DUPLICATE KEY UPDATE units = units " + op + " VALUES(units), " +
		"participations = participations " + op + " VALUES(participations)")
	if op == "+" {
		s.write(", units_limit = VALUES(units_limit), participation_cap = VALUES(participation_cap)")
	}
	res := s.exec(tx)
	return res.RowsAffected, res.Error
}

// addUserUnits adds units and orders to user_purchases and refuses (a *guardError) when
// a user would hold more than the limit, or more orders than the cap on
// participations, of the orders being added: the CHECKs of the rows refuse them, so
// nothing is read back.
func addUserUnits(tx *gorm.DB, rows []userUnits) error {
	buyers := byBuyer(rows)
	_, err := changeUserPurchases(tx, buyers, "+")
	if guard := overLimit(err, buyers); guard != nil {
		return guard
	}
	if err != nil {
		return fmt.Errorf("add user units: %w", err)
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
	buyers := byBuyer(rows)
	affected, err := changeUserPurchases(tx, buyers, "-")
	if err != nil {
		return fmt.Errorf("take back user units: %w", err)
	}
	if affected != 2*int64(len(buyers)) {
		return fmt.Errorf("take back user units: %d of %d buyers had no totals", 2*int64(len(buyers))-affected, len(buyers))
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
func (s *Orders) Holdings(ctx context.Context, activityID int64) (map[buyer.ID]int64, error) {
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
