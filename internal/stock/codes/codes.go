// Package codes keeps a sale's access codes in Redis (early access), in the sale's slot,
// where the scripts a buyer presents a code to decide who owns it (the reserve script
// and the waiting room's join, with the core's code.lua): codes added (Put), revoked
// (Revoke) and written back after a rebuild (Restore), and the uses not yet recorded in
// MySQL read (Claims) and dropped once recorded (Forget). internal/accesscode keeps the
// codes in MySQL and runs these.
package codes

//go:generate go test -run ^TestScripts$ -args -update

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
)

// Codes are the access codes of every sale, on the Redis of a stock.Stock.
type Codes struct {
	rdb redis.UniversalClient
}

// New returns the Codes of sk.
func New(sk *stock.Stock) *Codes { return &Codes{rdb: sk.Redis()} }

// chunk bounds the codes of one script call or pipeline: a call holds Redis about a
// millisecond.
const chunk = 5000

//go:embed put.lua
var putLua string

// putScript adds codes to a sale (put.lua).
var putScript = stock.NewScript(putLua, nil)

//go:embed revoke.lua
var revokeLua string

// revokeScript revokes a code of a sale (revoke.lua).
var revokeScript = stock.NewScript(revokeLua, nil)

// Put adds codes to a sale, each unless it has it already (put.lua).
func (c *Codes) Put(ctx context.Context, activityID int64, codes []string) error {
	b := stock.One(activityID)
	for part := range slices.Chunk(codes, chunk) {
		args := make([]any, len(part))
		for i, code := range part {
			args[i] = code
		}
		if err := putScript.Run(ctx, c.rdb, []string{stock.SaleKey(b), stock.CodesKey(b)}, args...).Err(); err != nil {
			return fmt.Errorf("put access codes of sale %d: %w", activityID, err)
		}
	}
	return nil
}

// Revoke revokes a code of a sale that is not archived (revoke.lua).
func (c *Codes) Revoke(ctx context.Context, activityID int64, code string) error {
	b := stock.One(activityID)
	if err := revokeScript.Run(ctx, c.rdb, []string{stock.SaleKey(b), stock.CodesKey(b)}, code).Err(); err != nil {
		return fmt.Errorf("revoke access code of sale %d: %w", activityID, err)
	}
	return nil
}

// State is a code as MySQL has it, for a rebuild: its owner (none: the zero ID) since
// UsedAt, and whether it is revoked.
type State struct {
	Code    string
	Owner   buyer.ID
	UsedAt  time.Time
	Revoked bool
}

// value is the code's value in the codes hash (code.lua).
func (s State) value() string {
	v := ""
	if s.Owner != "" {
		v = s.Owner.Key() + " " + strconv.FormatInt(s.UsedAt.UnixMilli(), 10)
	}
	if s.Revoked {
		v = "-" + v
	}
	return v
}

// Restore writes a sale's codes back (a rebuild, while the sale is closed): a free code
// where the hash has none, an owned or revoked one as given. An owner the hash has for a
// code given free (Redis's, not yet recorded in MySQL) stays.
func (c *Codes) Restore(ctx context.Context, activityID int64, codes []State) error {
	key := stock.CodesKey(stock.One(activityID))
	for part := range slices.Chunk(codes, chunk) {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, s := range part {
				if v := s.value(); v == "" {
					p.HSetNX(ctx, key, s.Code, v)
				} else {
					p.HSet(ctx, key, s.Code, v)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("restore access codes of sale %d: %w", activityID, err)
		}
	}
	return nil
}

// Claim is a code a buyer came to own at At, as its sale's slot holds it; Buyer is the
// zero ID when the slot no longer says whose (nothing to record).
type Claim struct {
	Code  string
	Buyer buyer.ID
	At    time.Time
}

// Claims returns, for each sale, up to most of the codes buyers came to own that Forget
// has not dropped, oldest first, in two round trips.
func (c *Codes) Claims(ctx context.Context, activityIDs []int64, most int) (map[int64][]Claim, error) {
	claims := make([]*redis.StringSliceCmd, len(activityIDs))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range activityIDs {
			claims[i] = p.ZRange(ctx, stock.CodeClaimsKey(stock.One(id)), 0, int64(most-1))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read uses of access codes: %w", err)
	}
	values := make([]*redis.SliceCmd, len(activityIDs))
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range activityIDs {
			if codes := claims[i].Val(); len(codes) > 0 {
				values[i] = p.HMGet(ctx, stock.CodesKey(stock.One(id)), codes...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read uses of access codes: %w", err)
	}
	out := make(map[int64][]Claim)
	for i, id := range activityIDs {
		if values[i] == nil {
			continue
		}
		for j, v := range values[i].Val() {
			cl := Claim{Code: claims[i].Val()[j]}
			str, _ := v.(string)
			key, at, ok := strings.Cut(strings.TrimPrefix(str, "-"), " ")
			ms, err := strconv.ParseInt(at, 10, 64)
			if who, kerr := buyer.FromKey(key); ok && err == nil && kerr == nil {
				cl.Buyer, cl.At = who, time.UnixMilli(ms).UTC()
			}
			out[id] = append(out[id], cl)
		}
	}
	return out, nil
}

// Forget drops uses of a sale's codes once MySQL has recorded them.
func (c *Codes) Forget(ctx context.Context, activityID int64, codes []string) error {
	if len(codes) == 0 {
		return nil
	}
	members := make([]any, len(codes))
	for i, code := range codes {
		members[i] = code
	}
	if err := c.rdb.ZRem(ctx, stock.CodeClaimsKey(stock.One(activityID)), members...).Err(); err != nil {
		return fmt.Errorf("forget uses of access codes: %w", err)
	}
	return nil
}
