package stock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
)

// A sale's access codes (early access; internal/accesscode keeps them in MySQL) live in
// its slot, where the scripts a buyer presents a code to read them: the reserve script
// of a purchase before the start, and the line's join (internal/line).

// Errors of a code presented.
var (
	ErrCodeInvalid = errors.New("the access code is not one of this sale's, or it was revoked")
	ErrCodeTaken   = errors.New("the access code is another buyer's: it serves the first buyer who presented it")
)

// codesKey is a hash of the sale's access codes: code -> "" (free), "<buyer key> <unix
// ms>" (owned by that buyer since), or either with "-" before it (revoked: "-" for a code
// nobody owned).
func codesKey(b Bucket) string { return prefix(b) + "codes" }

// codeClaimsKey is a sorted set of the codes buyers have come to own, by when (unix ms),
// until MySQL has recorded their owners (ForgetClaims).
func codeClaimsKey(b Bucket) string { return prefix(b) + "codes:claims" }

// CodesKey and CodeClaimsKey are a sale's codes and the uses not yet recorded (see
// codesKey and codeClaimsKey), for internal/line's join, which takes a code with
// CodeLua.
func CodesKey(activityID int64) string      { return codesKey(one(activityID)) }
func CodeClaimsKey(activityID int64) string { return codeClaimsKey(one(activityID)) }

// CodeLua defines, for the scripts a buyer presents a code to (the reserve script, the
// line's join):
//
//	code_refused(codes, claims, code, user, now): nil when the buyer of key user may
//	  use the code: it was free, and is theirs from now (recorded in claims), or it is
//	  theirs already; else 'invalid' (no such code, or revoked) or 'taken' (another
//	  buyer's). now is unix ms.
const CodeLua = `
local function code_refused(codes, claims, code, user, now)
  local v = redis.call('HGET', codes, code)
  if not v or string.sub(v, 1, 1) == '-' then return 'invalid' end
  if v == '' then
    local at = string.format('%d', now)
    redis.call('HSET', codes, code, user .. ' ' .. at)
    redis.call('ZADD', claims, at, code)
    return nil
  end
  if string.match(v, '^(%S+)') ~= user then return 'taken' end
  return nil
end
`

// putCodesScript adds codes to a sale, each unless the sale has it (free, owned or
// revoked). A sale Redis lost gets them too: its rebuild writes every code back, and
// adds none twice. Only an archived sale gets none (its keys are going, or gone).
//
// KEYS[1] sale, KEYS[2] codes; ARGV the codes. Returns how many were added.
var putCodesScript = newScript(nil, "", `
local sale, codes = KEYS[1], KEYS[2]
local given = ARGV
`, `
if redis.call('HEXISTS', sale, 'archived') == 1 then return 0 end
local added = 0
for _, code in ipairs(given) do added = added + redis.call('HSETNX', codes, code, '') end
return added
`)

// revokeCodeScript revokes a code of a sale that is not archived, keeping its owner
// beside the mark.
//
// KEYS[1] sale, KEYS[2] codes; ARGV[1] code. Returns 1, or 0 for an archived sale.
var revokeCodeScript = newScript(nil, "", `
local sale, codes = KEYS[1], KEYS[2]
local code = ARGV[1]
`, `
if redis.call('HEXISTS', sale, 'archived') == 1 then return 0 end
local v = redis.call('HGET', codes, code) or ''
if string.sub(v, 1, 1) ~= '-' then redis.call('HSET', codes, code, '-' .. v) end
return 1
`)

// putChunk bounds the codes of one script call or pipeline: a call holds Redis about
// a millisecond.
const putChunk = 5000

// PutCodes adds codes to a sale, each unless it has it already (putCodesScript).
func (s *Stock) PutCodes(ctx context.Context, activityID int64, codes []string) error {
	b := one(activityID)
	for part := range slices.Chunk(codes, putChunk) {
		args := make([]any, len(part))
		for i, c := range part {
			args[i] = c
		}
		if err := putCodesScript.Run(ctx, s.rdb, []string{saleKey(b), codesKey(b)}, args...).Err(); err != nil {
			return fmt.Errorf("put access codes of sale %d: %w", activityID, err)
		}
	}
	return nil
}

// RevokeCode revokes a code of a sale that is not archived.
func (s *Stock) RevokeCode(ctx context.Context, activityID int64, code string) error {
	b := one(activityID)
	if err := revokeCodeScript.Run(ctx, s.rdb, []string{saleKey(b), codesKey(b)}, code).Err(); err != nil {
		return fmt.Errorf("revoke access code of sale %d: %w", activityID, err)
	}
	return nil
}

// CodeState is a code as MySQL has it, for a rebuild: its owner (none: the zero ID)
// since UsedAt, and whether it is revoked.
type CodeState struct {
	Code    string
	Owner   buyer.ID
	UsedAt  time.Time
	Revoked bool
}

// value is the code's value in the codes hash.
func (c CodeState) value() string {
	v := ""
	if c.Owner != "" {
		v = c.Owner.Key() + " " + strconv.FormatInt(c.UsedAt.UnixMilli(), 10)
	}
	if c.Revoked {
		v = "-" + v
	}
	return v
}

// RestoreCodes writes a sale's codes back (a rebuild, while the sale is closed): a free
// code where the hash has none, an owned or revoked one as given. An owner the hash has
// for a code given free (Redis's, not yet recorded in MySQL) stays.
func (s *Stock) RestoreCodes(ctx context.Context, activityID int64, codes []CodeState) error {
	key := codesKey(one(activityID))
	for part := range slices.Chunk(codes, putChunk) {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range part {
				if v := c.value(); v == "" {
					p.HSetNX(ctx, key, c.Code, v)
				} else {
					p.HSet(ctx, key, c.Code, v)
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

// CodeClaim is a code a buyer came to own at At, as its sale's slot holds it; Buyer is
// the zero ID when the slot no longer says whose (nothing to record).
type CodeClaim struct {
	Code  string
	Buyer buyer.ID
	At    time.Time
}

// CodeClaims returns, for each sale, up to most of the codes buyers came to own that
// ForgetClaims has not dropped, oldest first, in two round trips.
func (s *Stock) CodeClaims(ctx context.Context, activityIDs []int64, most int) (map[int64][]CodeClaim, error) {
	claims := make([]*redis.StringSliceCmd, len(activityIDs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range activityIDs {
			claims[i] = p.ZRange(ctx, codeClaimsKey(one(id)), 0, int64(most-1))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read uses of access codes: %w", err)
	}
	values := make([]*redis.SliceCmd, len(activityIDs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range activityIDs {
			if codes := claims[i].Val(); len(codes) > 0 {
				values[i] = p.HMGet(ctx, codesKey(one(id)), codes...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read uses of access codes: %w", err)
	}
	out := make(map[int64][]CodeClaim)
	for i, id := range activityIDs {
		if values[i] == nil {
			continue
		}
		for j, v := range values[i].Val() {
			c := CodeClaim{Code: claims[i].Val()[j]}
			str, _ := v.(string)
			key, at, ok := strings.Cut(strings.TrimPrefix(str, "-"), " ")
			ms, err := strconv.ParseInt(at, 10, 64)
			if who, kerr := buyer.FromKey(key); ok && err == nil && kerr == nil {
				c.Buyer, c.At = who, time.UnixMilli(ms).UTC()
			}
			out[id] = append(out[id], c)
		}
	}
	return out, nil
}

// ForgetClaims drops uses of a sale's codes once MySQL has recorded them.
func (s *Stock) ForgetClaims(ctx context.Context, activityID int64, codes []string) error {
	if len(codes) == 0 {
		return nil
	}
	members := make([]any, len(codes))
	for i, c := range codes {
		members[i] = c
	}
	if err := s.rdb.ZRem(ctx, codeClaimsKey(one(activityID)), members...).Err(); err != nil {
		return fmt.Errorf("forget uses of access codes: %w", err)
	}
	return nil
}
