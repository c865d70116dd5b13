package store

import "gorm.io/gorm"

// salePage is how many of a sale's orders one statement over a whole sale looks at, so
// that each answers within a read's bound (config.MySQL: 2 s) however large the sale:
// over a million orders, a sum sent nothing before that bound, and a read of every
// order's facts did not end within a statement's (a variable for tests of the pages).
var salePage = 50_000

// salePages calls read once per page of a sale's orders, salePage of them at a time in
// id order through the index orders_by_sale (named), with page: db on the orders of
// that page alone (the table and the range set; read adds the rest of its statement).
// On a transaction of repeatable reads the pages are one snapshot of the sale.
func salePages(db *gorm.DB, activityID int64, read func(page *gorm.DB) error) error {
	const table = "orders FORCE INDEX (orders_by_sale)"
	for after := ""; ; {
		var last []string // the page's last id, from the index alone
		if err := db.Table(table).Where("activity_id = ? AND id > ?", activityID, after).Order("id").
			Offset(salePage-1).Limit(1).Pluck("id", &last).Error; err != nil {
			return err
		}
		page := db.Table(table).Where("activity_id = ? AND id > ?", activityID, after)
		if len(last) > 0 {
			page = page.Where("id <= ?", last[0])
		}
		if err := read(page); err != nil || len(last) == 0 {
			return err
		}
		after = last[0]
	}
}
