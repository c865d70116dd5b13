package stock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// A sale's generation (the field gen of its hash) tells current Redis state from stale.
// It goes up by one with every write that moves an order between Redis and MySQL: a
// worker's claim (before its MySQL transaction), its settle, a cancelled order's units
// coming back. The worker records in MySQL (activities.redis_gen) the generation its
// claim got, in the transaction that writes the orders; so MySQL's figure was reached
// in Redis before MySQL had it, and a current Redis is never behind it. A Redis that is
// (an AOF from yesterday, a replica promoted without the last writes) lost writes that
// MySQL saw, and its sale must be rebuilt. A rebuild sets the generation past both.

// bumpGenLua is the step the scripts that move orders share: the sale's generation goes
// up by one, if the sale exists (a lost sale stays missing, to be rebuilt). It returns
// the new generation, 0 for a missing sale. A sale exists when its hash has total: a
// script that adds to a lost sale's counts (avail, qunits) leaves a partial hash.
const bumpGenLua = `
local function bump_gen(sale)
  if redis.call('HEXISTS', sale, 'total') == 0 then return 0 end
  return redis.call('HINCRBY', sale, 'gen', 1)
end
`

// RebuildPoint is what a rebuild starts from: whether Redis has the sale, its
// generation, and the orders it holds as queued.
type RebuildPoint struct {
	Exists bool
	Gen    int64
	Queued []QueuedOrder
}

// RebuildPoint reads, atomically, what Rebuild needs to know of a sale's Redis state.
func (s *Stock) RebuildPoint(ctx context.Context, activityID int64) (RebuildPoint, error) {
	var sale *redis.SliceCmd
	var queued *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		sale = p.HMGet(ctx, saleKey(activityID), "total", "gen")
		queued = p.HGetAll(ctx, queuedKey(activityID))
		return nil
	})
	if err != nil {
		return RebuildPoint{}, fmt.Errorf("read sale %d before a rebuild: %w", activityID, err)
	}
	v := sale.Val()
	gen, _ := v[1].(string)
	pt := RebuildPoint{Exists: v[0] != nil}
	for id, v := range queued.Val() {
		q, err := parseQueued(activityID, id, v)
		if err != nil {
			return pt, err
		}
		pt.Queued = append(pt.Queued, q)
	}
	if gen != "" {
		if pt.Gen, err = strconv.ParseInt(gen, 10, 64); err != nil {
			return pt, fmt.Errorf("sale %d: generation %q", activityID, gen)
		}
	}
	return pt, nil
}

// rebuildScript writes a sale's state from its record (MySQL), keeping the orders Redis
// still holds as queued that MySQL does not have, only if the sale is as the caller read
// it (the RebuildPoint): missing when it was missing, at the same generation when it was
// there. Otherwise something moved meanwhile (another process rebuilt it, a worker
// claimed or settled orders) and nothing is written.
//
// KEYS[1] sale hash  KEYS[2] users hash  KEYS[3] queued hash  KEYS[4] claimed set
// KEYS[5] queued-since sorted set  KEYS[6] returned set  KEYS[7] the users hash as
// MySQL's orders make it (units, and participations p<user>), written beforehand in
// chunks (it becomes the users hash; it may not exist when no user holds any)
// KEYS[7+i] the queued set of the user of stored order i
// ARGV[1] the generation read, "" when the sale was missing
// ARGV[2] total  ARGV[3] the units MySQL's orders hold  ARGV[4] the new generation
// ARGV[5] activity id  ARGV[6] the returned-units channel
// ARGV[7] f, then ARGV[8..7+f] the sale's settings as field, value, ... (Sale.fields)
// ARGV[8+f] n, then the n queued order ids MySQL has (they are settled here: MySQL's
// units count them)
//
// The units available are the total minus MySQL's units minus those of the orders that
// stay queued, and each user holds MySQL's units plus those of their queued orders (and
// one participation each, for values that carry a cap). The users hash is written by
// the caller beforehand under another key, in chunks, so that a sale of many buyers
// does not block Redis for the whole of it; the script renames it in place. The
// returned set is cleared:
// the orders whose units are still on their way back are held in MySQL's figures, and
// come back once more by the repair pass. A group-buy sale's groups are written after
// it (RestoreGroups).
// Returns 1 rebuilt, 0 the sale moved meanwhile.
var rebuildScript = redis.NewScript(unitsLua + `
local gen = redis.call('HGET', KEYS[1], 'gen')
if ARGV[1] == '' then
  if redis.call('HEXISTS', KEYS[1], 'total') == 1 then return 0 end
elseif gen ~= ARGV[1] and not (gen == false and ARGV[1] == '0') then
  return 0
end
local f = tonumber(ARGV[7])
local n = tonumber(ARGV[8 + f])
local stored, sets = {}, {}
for i = 1, n do stored[i], sets[i] = ARGV[8 + f + i], KEYS[7 + i] end
unqueue(KEYS[1], KEYS[3], KEYS[4], KEYS[5], stored, sets)
redis.call('UNLINK', KEYS[2], KEYS[6])
if redis.call('EXISTS', KEYS[7]) == 1 then
  redis.call('RENAME', KEYS[7], KEYS[2])
  redis.call('PERSIST', KEYS[2])
end
local queued = redis.call('HVALS', KEYS[3])
local qunits = 0
for _, v in ipairs(queued) do
  local user, qty, capped = string.match(v, '^(%d+) (%d+) %d+ %d+( ?)')
  redis.call('HINCRBY', KEYS[2], user, qty)
  if capped == ' ' then redis.call('HINCRBY', KEYS[2], 'p' .. user, 1) end
  qunits = qunits + tonumber(qty)
end
local avail = math.max(0, tonumber(ARGV[2]) - tonumber(ARGV[3]) - qunits)
local fields = {'avail', string.format('%d', avail), 'qunits', string.format('%d', qunits), 'gen', ARGV[4]}
for i = 8, 7 + f do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PUBLISH', ARGV[6], ARGV[5])
return 1
`)

// ErrMoved is a rebuild that found the sale changed since its RebuildPoint.
var ErrMoved = errors.New("the sale changed in Redis during the rebuild")

// Rebuild writes a sale's state from its record (MySQL) when Redis has lost it or holds
// it stale. from is what RebuildPoint read before MySQL was; sale holds the settings and
// the new generation (sale.Gen, above both Redis's and MySQL's); users the units each
// user holds in MySQL, held their sum, parts the orders each holds (participations,
// counted where the sale caps them or sells in groups); stored the orders of
// from.Queued that MySQL has.
// Orders Redis still holds as queued and MySQL does not stay queued and keep their
// units. It returns ErrMoved, writing nothing, when the sale is no longer as from says
// (rebuilt by another process, or orders moved meanwhile: read both again). Every API
// process's sold-out flag of the sale is cleared.
func (s *Stock) Rebuild(ctx context.Context, from RebuildPoint, sale Sale, users, parts map[int64]int64, held int64, stored []QueuedOrder) error {
	expect := ""
	if from.Exists {
		expect = strconv.FormatInt(from.Gen, 10)
	}
	fields := append(sale.fields(), "rebuilt", time.Now().UnixMilli()) // see Adopt
	args := append([]any{expect, sale.Total, held, sale.Gen, sale.ActivityID, ReturnedChannel, len(fields)}, fields...)
	args = append(args, len(stored))
	staged, err := s.stageUsers(ctx, sale, users, parts)
	if err != nil {
		return err
	}
	keys := []string{saleKey(sale.ActivityID), usersKey(sale.ActivityID), queuedKey(sale.ActivityID),
		claimedKey(sale.ActivityID), queuedSinceKey(sale.ActivityID), returnedKey(sale.ActivityID), staged}
	for _, q := range stored {
		args = append(args, q.OrderID)
		keys = append(keys, userQueuedKey(sale.ActivityID, q.UserID))
	}
	n, err := rebuildScript.Run(ctx, s.rdb, keys, args...).Int64()
	if err != nil {
		return fmt.Errorf("rebuild sale %d: %w", sale.ActivityID, err)
	}
	if n == 0 {
		_ = s.rdb.Unlink(ctx, staged).Err() // it expires anyway
		return ErrMoved
	}
	s.soldOut.clear(sale.ActivityID)
	return nil
}

// KeptKey is an Idempotency-Key that made an order MySQL holds (RestoreKeys).
type KeptKey struct {
	UserID                    int64
	Key, Fingerprint, OrderID string
	// Expires is when the key would have expired: its order's creation plus
	// IdempotencyTTL.
	Expires time.Time
}

// RestoreKeys writes back the Idempotency-Keys of a sale's stored orders where Redis has
// none (SET NX), each until it would have expired, so that a replay after a rebuild of
// the sale gets its order, not a second one. A key found in Redis is left as it is.
func (s *Stock) RestoreKeys(ctx context.Context, activityID int64, keys []KeptKey) error {
	now := time.Now()
	for start := 0; start < len(keys); start += stageChunk {
		cmds, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys[start:min(start+stageChunk, len(keys))] {
				if k.Expires.After(now) {
					p.SetArgs(ctx, idempotencyKey(activityID, k.UserID, k.Key), k.Fingerprint+" "+k.OrderID,
						redis.SetArgs{Mode: "NX", ExpireAt: k.Expires})
				}
			}
			return nil
		})
		for _, c := range cmds {
			if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) { // Nil: the key was there
				return fmt.Errorf("restore idempotency keys of sale %d: %w", activityID, err)
			}
		}
	}
	return nil
}

// stageChunk is how many fields one HSET of stageUsers writes: each one keeps Redis
// busy for a few milliseconds at most.
const stageChunk = 5000

// stageUsers writes the users hash a rebuild will put in place (each user's units, and
// participations where the sale counts them) under a key of its own in the sale's slot,
// in pipelined chunks, and returns that key. The key expires in a minute should the
// rebuild not take it.
func (s *Stock) stageUsers(ctx context.Context, sale Sale, users, parts map[int64]int64) (string, error) {
	key := prefix(sale.ActivityID) + "users:rebuild:" + strconv.FormatInt(sale.Gen, 10) + ":" + newToken()
	fields := make([]any, 0, 2*stageChunk)
	counted := sale.Kind == "group" || sale.Participations > 0
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		flush := func() {
			if len(fields) > 0 {
				p.HSet(ctx, key, fields...)
				p.Expire(ctx, key, time.Minute)
				fields = make([]any, 0, 2*stageChunk)
			}
		}
		add := func(field string, n int64) {
			if fields = append(fields, field, n); len(fields) == 2*stageChunk {
				flush()
			}
		}
		for u, n := range users {
			if n > 0 {
				add(strconv.FormatInt(u, 10), n)
			}
		}
		for u, n := range parts {
			if n > 0 && counted {
				add(participationsField(u), n)
			}
		}
		flush()
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("rebuild sale %d: stage users: %w", sale.ActivityID, err)
	}
	return key, nil
}

// newToken is 8 random bytes in hex, so two processes' staged hashes never meet.
func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// adoptScript brings back orders whose task survived while their sale's Redis state was
// lost (a shard wiped, a failover without the last writes, while the queue lives on
// another master): each one not queued, not given back by the API, and taken before the
// sale was last rebuilt has its units taken again, if there are enough and its buyer
// stays within the limit and the cap on participations (the buyer may have bought again
// on the rebuilt sale, which did not count it), and is queued and claimed, as it was. A
// seat of a group-buy sale is not: its group's state went with the sale's. An orphan
// not adopted is reported (nothing taken) for the worker to store failed.
//
// KEYS[1] sale hash  KEYS[2] users hash  KEYS[3] queued hash  KEYS[4] claimed set
// KEYS[5] given-back set
// ARGV per order: id, its queued value ("user quantity created_ms limit [cap group
// size expires]", group "-" outside one)
// Returns per order: 1 queued and claimed (adopted now, or queued already), 2 an orphan
// but too few units are left (nothing taken), 0 not an orphan, 3 the sale itself is
// missing (not rebuilt yet), 4 an orphan seat (nothing taken), 5 an orphan whose buyer
// would pass the limit or the cap (nothing taken).
var adoptScript = redis.NewScript(`
local out = {}
if redis.call('HEXISTS', KEYS[1], 'total') == 0 then
  for i = 1, #ARGV, 2 do out[#out + 1] = 3 end
  return out
end
local rebuilt = tonumber(redis.call('HGET', KEYS[1], 'rebuilt') or '0')
for i = 1, #ARGV, 2 do
  local id, v = ARGV[i], ARGV[i + 1]
  local user, qty, created, limit, cap = string.match(v, '^(%d+) (%d+) (%d+) (%d+) ?(%d*)')
  local group = string.match(v, '^%d+ %d+ %d+ %d+ %d+ (%S+)')
  qty, cap = tonumber(qty), tonumber(cap) or 0
  local held = redis.call('HMGET', KEYS[2], user, 'p' .. user)
  local r = 0
  if redis.call('HEXISTS', KEYS[3], id) == 1 then
    redis.call('SADD', KEYS[4], id)
    r = 1
  elseif tonumber(created) >= rebuilt or redis.call('SISMEMBER', KEYS[5], id) == 1 then
    r = 0
  elseif group and group ~= '-' then
    r = 4
  elseif tonumber(held[1] or '0') + qty > tonumber(limit) or (cap > 0 and tonumber(held[2] or '0') >= cap) then
    r = 5
  else
    local avail = tonumber(redis.call('HGET', KEYS[1], 'avail'))
    if avail >= qty then
      redis.call('HSET', KEYS[1], 'avail', string.format('%d', avail - qty))
      redis.call('HINCRBY', KEYS[1], 'qunits', qty)
      redis.call('HINCRBY', KEYS[2], user, qty)
      if cap > 0 then redis.call('HINCRBY', KEYS[2], 'p' .. user, 1) end
      redis.call('HSET', KEYS[3], id, v)
      redis.call('SADD', KEYS[4], id)
      r = 1
    else
      r = 2
    end
  end
  out[#out + 1] = r
end
return out
`)

// Adoption is what Adopt did with one order.
type Adoption int

// Adopt outcomes.
const (
	NotOrphan       Adoption = iota // given back by the API, taken after the rebuild, or no such sale
	Adopted                         // queued and claimed again, its units taken
	OrphanNoStock                   // an orphan, but too few units are left: nothing taken
	SaleMissing                     // the sale is lost and not rebuilt yet: ask again later
	OrphanSeat                      // a seat in a group whose state was lost: nothing taken
	OrphanOverLimit                 // an orphan whose buyer would pass the limit or the cap: nothing taken
)

// Adopt brings back the orders of a sale that a worker's task names but Redis no longer
// holds as queued and MySQL does not have (the caller checked both): orders whose state
// was lost with the sale's, after Redis had acknowledged them. Seats of group-buy sales
// are not adopted (their group's state went with them: OrphanSeat). It returns each
// order's outcome by id.
func (s *Stock) Adopt(ctx context.Context, activityID int64, orders []QueuedOrder) (map[string]Adoption, error) {
	out := make(map[string]Adoption, len(orders))
	var args []any
	var ids []string
	for _, q := range orders {
		v := fmt.Sprintf("%d %d %d %d", q.UserID, q.Quantity, q.CreatedAt.UnixMilli(), q.Limit)
		switch {
		case q.Group != "":
			v += fmt.Sprintf(" %d %s %d %d", q.Participations, q.Group, q.GroupSize, q.GroupExpiresAt.UnixMilli())
		case q.Participations > 0:
			v += fmt.Sprintf(" %d - 0 0", q.Participations)
		}
		args = append(args, q.OrderID, v)
		ids = append(ids, q.OrderID)
	}
	if len(ids) == 0 {
		return out, nil
	}
	keys := []string{saleKey(activityID), usersKey(activityID), queuedKey(activityID), claimedKey(activityID),
		givenBackKey(activityID)}
	res, err := adoptScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("adopt orders: %w", err)
	}
	if len(res) != len(ids) {
		return nil, fmt.Errorf("adopt orders: %d answers for %d orders", len(res), len(ids))
	}
	for i, id := range ids {
		out[id] = Adoption(res[i])
	}
	return out, nil
}
