package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"seckill/internal/buyer"
)

// The per-user rule's refusal is read from MariaDB's error of a CHECK (the one tests
// meet, TestPersistBatchUserRuleInMySQL) and from MySQL 8's, whose number and wording
// differ; any other error is no refusal.
func TestOverLimitReadsEitherServersCheck(t *testing.T) {
	one := userUnits{activityID: 1, buyer: buyer.Of(7), units: 2, orders: 2, limit: 1, cap: 1}
	tests := []struct {
		name   string
		err    error
		buyers []userUnits
		want   string // "" for no refusal
	}{
		{"mariadb, limit", &mysql.MySQLError{Number: 4025,
			Message: "CONSTRAINT `user_purchases_within_limit` failed for `db`.`user_purchases`"}, []userUnits{one},
			"over the per-user limit of 1 in MySQL"},
		{"mysql 8, cap", &mysql.MySQLError{Number: 3819,
			Message: "Check constraint 'user_purchases_within_cap' is violated."}, []userUnits{one},
			"over the cap of 1 participations in MySQL"},
		{"mysql 8, limit, several buyers", fmt.Errorf("add: %w", &mysql.MySQLError{Number: 3819,
			Message: "Check constraint 'user_purchases_within_limit' is violated."}), []userUnits{one, {activityID: 1, buyer: buyer.Of(8)}},
			"over a per-user limit in MySQL"},
		{"another table's check", &mysql.MySQLError{Number: 4025,
			Message: "CONSTRAINT `user_purchases_units` failed for `db`.`user_purchases`"}, []userUnits{one}, ""},
		{"a duplicate key", &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, []userUnits{one}, ""},
		{"not mysql's", errors.New("user_purchases_within_limit"), []userUnits{one}, ""},
		{"none", nil, []userUnits{one}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := overLimit(tt.err, tt.buyers)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("overLimit = %q, want no refusal", got.reason)
			case tt.want != "" && (got == nil || got.reason != tt.want):
				t.Errorf("overLimit = %v, want %q", got, tt.want)
			}
		})
	}
}

// byBuyer sums a batch's rows by buyer of a sale, whatever their order, each buyer's
// limit and cap the highest of theirs, in the order batches lock user_purchases: by
// sale, then by the buyer's bytes.
func TestByBuyerSumsEachBuyerInLockOrder(t *testing.T) {
	row := func(act int64, who string, units int64, limit, cap int) userUnits {
		return userUnits{activityID: act, buyer: buyer.ID(who), units: units, orders: 1, limit: limit, cap: cap}
	}
	tests := []struct {
		name string
		rows []userUnits
		want []userUnits
	}{
		{"none", nil, []userUnits{}},
		{"one", []userUnits{row(1, "a", 2, 3, 0)}, []userUnits{row(1, "a", 2, 3, 0)}},
		{"a buyer's orders apart, sales mixed",
			[]userUnits{row(2, "b", 1, 1, 0), row(1, "b", 1, 2, 1), row(1, "a", 2, 5, 0), row(2, "b", 3, 4, 2), row(1, "b", 1, 1, 3)},
			[]userUnits{row(1, "a", 2, 5, 0), {activityID: 1, buyer: "b", units: 2, orders: 2, limit: 2, cap: 3},
				{activityID: 2, buyer: "b", units: 4, orders: 2, limit: 4, cap: 2}}},
		{"by bytes", []userUnits{row(1, "b", 1, 1, 0), row(1, "B", 1, 1, 0), row(1, "ab", 1, 1, 0), row(1, "a", 1, 1, 0)},
			[]userUnits{row(1, "B", 1, 1, 0), row(1, "a", 1, 1, 0), row(1, "ab", 1, 1, 0), row(1, "b", 1, 1, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := byBuyer(tt.rows); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("byBuyer = %v\nwant %v", got, tt.want)
			}
		})
	}
}
