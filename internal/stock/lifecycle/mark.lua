-- Marks a bucket of a sale archived, while the archive's Close holds it.
--
-- KEYS[1] sale: the bucket's sale hash  ARGV[1] token: the archive's closing token
-- Returns a code of markCodes: MARKED (now or before), NOT_IN_REDIS (the bucket is not
-- in Redis: nothing written), LEASE_LOST (another process holds the sale closed: its
-- lease passed to a rebuild).
--
-- Sales.MarkArchived runs it (archive.go).

---- begin codes: written by go generate from markCodes
local MARKED, NOT_IN_REDIS, LEASE_LOST = 1, 0, -1
---- end codes

local sale, token = KEYS[1], ARGV[1]

local v = redis.call('HMGET', sale, 'total', 'closed', 'archived')
if v[3] then return MARKED end
if not v[1] then return NOT_IN_REDIS end
if string.match(v[2] or '', '^(%S+)') ~= token then return LEASE_LOST end
redis.call('HSET', sale, 'archived', '1')
return MARKED
