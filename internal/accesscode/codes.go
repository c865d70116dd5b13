package accesscode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"seckill/internal/apitime"
	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/codes"
	"seckill/internal/store"
)

// Mirror is the Redis side of a sale's codes, in the sale's slot (internal/stock/codes).
type Mirror interface {
	// Put adds codes to a sale, each unless Redis has it already (free, owned or
	// revoked); nothing for an archived sale.
	Put(ctx context.Context, activityID int64, codes []string) error
	// Revoke revokes a code of a sale: nobody may present it from then on.
	Revoke(ctx context.Context, activityID int64, code string) error
	// Restore writes a sale's codes back as MySQL has them, without undoing an owner
	// Redis has.
	Restore(ctx context.Context, activityID int64, codes []codes.State) error
	// Claims returns up to most of the uses of each sale's codes not yet recorded.
	Claims(ctx context.Context, activityIDs []int64, most int) (map[int64][]codes.Claim, error)
	// Forget drops recorded uses.
	Forget(ctx context.Context, activityID int64, codes []string) error
}

var _ Mirror = (*codes.Codes)(nil)

// Sales reads a sale as MySQL has it.
type Sales interface {
	GetActivity(ctx context.Context, id int64) (store.Activity, error)
}

var _ Sales = (*store.Activities)(nil)

// Codes are the access codes of every sale.
type Codes struct {
	db     *gorm.DB
	sales  Sales
	mirror Mirror
	now    func() time.Time
}

// New returns the codes kept in db and mirrored to Redis by mirror.
func New(db *gorm.DB, sales Sales, mirror Mirror) *Codes {
	return &Codes{db: db, sales: sales, mirror: mirror, now: time.Now}
}

// SetClock replaces the clock (tests).
func (c *Codes) SetClock(now func() time.Time) { c.now = now }

// row is one row of access_codes.
type row struct {
	ActivityID int64  `gorm:"primaryKey;autoIncrement:false"`
	Code       string `gorm:"primaryKey"`
	Buyer      *string
	UsedAt     *time.Time
	RevokedAt  *time.Time
	CreatedAt  time.Time
}

func (row) TableName() string { return "access_codes" }

// Code is an access code as the API lists it: Buyer and UsedAt once a buyer presented
// it (the first, who owns it).
type Code struct {
	Code   string        `json:"code"`
	Buyer  *string       `json:"buyer,omitempty"`
	UsedAt *apitime.Time `json:"used_at,omitempty"`
}

// insertChunk bounds the rows of one INSERT: three placeholders each, well under
// MySQL's 65,535 per statement.
const insertChunk = 2000

// Add adds the shop's own codes to a sale and returns how many were new: a code the
// sale has (free, owned or revoked) stays as it is, so an import repeated changes
// nothing. Errors: a *FieldError, store.ErrNotFound, store.ErrArchived, stock.ErrEnded,
// ErrSeveralBuckets.
func (c *Codes) Add(ctx context.Context, activityID int64, codes []string) (int, error) {
	if len(codes) < 1 || len(codes) > MaxPerCall {
		return 0, &FieldError{"codes", "must hold 1 to 100000 codes"}
	}
	for i, code := range codes {
		if !checkImported(code) {
			return 0, &FieldError{fmt.Sprintf("codes[%d]", i),
				"must be 4 to 64 bytes of printable ASCII characters (space to ~), neither the first nor the last a space"}
		}
	}
	if err := c.open(ctx, activityID); err != nil {
		return 0, err
	}
	var added int64
	err := c.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for part := range slices.Chunk(codes, insertChunk) {
			n, err := insert(tx, "INSERT IGNORE", activityID, part, c.now())
			if err != nil {
				return err
			}
			added += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("add access codes: %w", err)
	}
	// Every code of the call, not only the new ones: a call that failed here before
	// left MySQL's without Redis's.
	return int(added), c.mirror.Put(ctx, activityID, codes)
}

// Generate makes count new codes for a sale and returns them. Errors: a *FieldError,
// store.ErrNotFound, store.ErrArchived, stock.ErrEnded, ErrSeveralBuckets.
func (c *Codes) Generate(ctx context.Context, activityID int64, count int) ([]string, error) {
	if count < 1 || count > MaxPerCall {
		return nil, &FieldError{"count", "must be between 1 and 100000"}
	}
	if err := c.open(ctx, activityID); err != nil {
		return nil, err
	}
	// A code made twice, or one the sale has, is a chance of about 2^-64 a pair: the
	// whole call is made again then.
	for range 3 {
		codes, err := generate(count)
		if err != nil {
			return nil, err
		}
		err = c.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			for part := range slices.Chunk(codes, insertChunk) {
				if _, err := insert(tx, "INSERT", activityID, part, c.now()); err != nil {
					return err
				}
			}
			return nil
		})
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("generate access codes: %w", err)
		}
		return codes, c.mirror.Put(ctx, activityID, codes)
	}
	return nil, errors.New("generate access codes: a code made was taken three times in a row")
}

// insert inserts codes of a sale with verb (INSERT, or INSERT IGNORE to skip those
// there) and returns how many rows it added.
func insert(tx *gorm.DB, verb string, activityID int64, codes []string, now time.Time) (int64, error) {
	var q strings.Builder
	q.WriteString(verb + " INTO access_codes (activity_id, code, created_at) VALUES ")
	args := make([]any, 0, 3*len(codes))
	for i, code := range codes {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?)")
		args = append(args, activityID, code, now)
	}
	res := tx.Exec(q.String(), args...)
	return res.RowsAffected, res.Error
}

// open checks that a sale may take codes: it exists, is not archived and has not
// ended, and keeps its stock in one bucket.
func (c *Codes) open(ctx context.Context, activityID int64) error {
	a, err := c.sales.GetActivity(ctx, activityID)
	switch {
	case err != nil:
		return err
	case a.Archived():
		return store.ErrArchived
	case !c.now().Before(a.EndsAt):
		return stock.ErrEnded
	case a.StockBuckets > 1:
		return ErrSeveralBuckets
	}
	return nil
}

// Bounds of a page of codes (the contract's, as a page of orders).
const (
	DefaultPage = 100
	MaxPage     = 1000
)

// List returns a page of a sale's codes that are not revoked, in the order of their
// bytes: at most limit, those after after ("" from the first). Owners are as the
// worker last recorded them (within a second). Errors: a *FieldError,
// store.ErrNotFound.
func (c *Codes) List(ctx context.Context, activityID int64, after string, limit int) ([]Code, error) {
	if limit < 1 || limit > MaxPage {
		return nil, &FieldError{"limit", "must be an integer from 1 to " + strconv.Itoa(MaxPage)}
	}
	if _, err := c.sales.GetActivity(ctx, activityID); err != nil {
		return nil, err
	}
	var rows []row
	err := c.db.WithContext(ctx).Where("activity_id = ? AND code > ? AND revoked_at IS NULL", activityID, after).
		Order("code").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list access codes: %w", err)
	}
	out := make([]Code, len(rows))
	for i, r := range rows {
		out[i] = Code{Code: r.Code, Buyer: r.Buyer}
		if r.UsedAt != nil {
			at := apitime.Of(*r.UsedAt)
			out[i].UsedAt = &at
		}
	}
	return out, nil
}

// Revoke revokes a code of a sale: nobody may present it any more, and its buyer keeps
// what they bought with it. Revoking it again changes nothing. Errors: ErrNoCode,
// store.ErrNotFound.
func (c *Codes) Revoke(ctx context.Context, activityID int64, code string) error {
	a, err := c.sales.GetActivity(ctx, activityID)
	if err != nil {
		return err
	}
	res := c.db.WithContext(ctx).Model(&row{}).Where("activity_id = ? AND code = ?", activityID, code).
		Update("revoked_at", gorm.Expr("COALESCE(revoked_at, ?)", c.now()))
	switch {
	case res.Error != nil:
		return fmt.Errorf("revoke access code: %w", res.Error)
	case res.RowsAffected == 0:
		var n int64
		if err := c.db.WithContext(ctx).Model(&row{}).Where("activity_id = ? AND code = ?", activityID, code).
			Count(&n).Error; err != nil {
			return fmt.Errorf("revoke access code: %w", err)
		}
		if n == 0 {
			return ErrNoCode
		}
	}
	if a.Archived() {
		return nil // its Redis state is gone, and a code with it
	}
	return c.mirror.Revoke(ctx, activityID, code)
}

// Counts are a sale's codes: Issued (not revoked), of them Used (a buyer owns it, as
// the worker last recorded it), and Revoked.
type Counts struct {
	Issued  int64 `json:"issued"`
	Used    int64 `json:"used"`
	Revoked int64 `json:"revoked"`
}

// Counts counts a sale's codes.
func (c *Codes) Counts(ctx context.Context, activityID int64) (Counts, error) {
	var n Counts
	err := c.db.WithContext(ctx).Model(&row{}).Where("activity_id = ?", activityID).
		Select("COUNT(*) - COUNT(revoked_at) AS issued, COUNT(CASE WHEN revoked_at IS NULL THEN buyer END) AS used, " +
			"COUNT(revoked_at) AS revoked").Scan(&n).Error
	if err != nil {
		return Counts{}, fmt.Errorf("count access codes: %w", err)
	}
	return n, nil
}

// recordMost bounds the uses one sale records per run.
const recordMost = 5000

// Record records in MySQL who owns the codes buyers presented since the last run, in
// every sale that has codes and is not archived, and returns how many it recorded. The
// worker runs it every second.
func (c *Codes) Record(ctx context.Context) (int, error) {
	var ids []int64
	err := c.db.WithContext(ctx).Raw("SELECT id FROM activities a WHERE archived_at IS NULL AND " +
		"EXISTS (SELECT 1 FROM access_codes c WHERE c.activity_id = a.id) ORDER BY id").Scan(&ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return c.record(ctx, ids)
}

// RecordSale records every use of a sale's codes not yet recorded (the archive, before
// the sale's keys go).
func (c *Codes) RecordSale(ctx context.Context, activityID int64) error {
	for {
		n, err := c.record(ctx, []int64{activityID})
		if err != nil || n < recordMost {
			return err
		}
	}
}

func (c *Codes) record(ctx context.Context, ids []int64) (int, error) {
	claims, err := c.mirror.Claims(ctx, ids, recordMost)
	if err != nil {
		return 0, err
	}
	recorded := 0
	for _, id := range ids {
		uses := claims[id]
		for part := range slices.Chunk(uses, insertChunk) {
			done := make([]string, len(part))
			owned := make([]codes.Claim, 0, len(part))
			for i, u := range part {
				done[i] = u.Code
				if u.Buyer != "" { // else the slot no longer says whose: nothing to record
					owned = append(owned, u)
				}
			}
			if err := c.recordUses(ctx, id, owned); err != nil {
				return recorded, err
			}
			if err := c.mirror.Forget(ctx, id, done); err != nil {
				return recorded, err
			}
			recorded += len(part)
		}
	}
	return recorded, nil
}

// recordUses writes the owners of uses in one statement; a code with an owner keeps it.
func (c *Codes) recordUses(ctx context.Context, activityID int64, uses []codes.Claim) error {
	if len(uses) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString("UPDATE access_codes c JOIN (")
	args := make([]any, 0, 3*len(uses)+1)
	for i, u := range uses {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString("SELECT ? AS code, ? AS buyer, ? AS used_at")
		args = append(args, u.Code, string(u.Buyer), u.At)
	}
	q.WriteString(") u ON c.activity_id = ? AND c.code = u.code SET c.buyer = u.buyer, c.used_at = u.used_at " +
		"WHERE c.buyer IS NULL")
	args = append(args, activityID)
	if err := c.db.WithContext(ctx).Exec(q.String(), args...).Error; err != nil {
		return fmt.Errorf("record uses of access codes: %w", err)
	}
	return nil
}

// Restore writes a sale's codes back to Redis as MySQL has them (a rebuild, before the
// sale reopens): the free ones where Redis has none, the owned and the revoked ones as
// MySQL says. An owner Redis has and MySQL has not recorded yet stays.
func (c *Codes) Restore(ctx context.Context, activityID int64) error {
	var rows []row
	err := c.db.WithContext(ctx).Where("activity_id = ?", activityID).Find(&rows).Error
	if err != nil {
		return fmt.Errorf("read access codes: %w", err)
	}
	if len(rows) == 0 {
		return nil
	}
	states := make([]codes.State, len(rows))
	for i, r := range rows {
		states[i] = codes.State{Code: r.Code, Revoked: r.RevokedAt != nil}
		if r.Buyer != nil && r.UsedAt != nil {
			states[i].Owner, states[i].UsedAt = buyer.ID(*r.Buyer), *r.UsedAt
		}
	}
	return c.mirror.Restore(ctx, activityID, states)
}
