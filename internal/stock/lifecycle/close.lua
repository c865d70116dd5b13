-- Closes a sale of several buckets for a rebuild, unless another rebuild
-- closed it less than the lease ago, or it is being archived (archive.go). Run on
-- bucket 0, the lease's holder.
--
-- KEYS[1] sale: bucket 0's sale hash
-- ARGV[1] token: this rebuild's token  ARGV[2] lease: RebuildLease in ms
-- Returns a code of closeCodes.
--
-- Sales.Close runs it (rebuild.go).

---- begin codes: written by go generate from closeCodes
local CLOSED_NOW, REBUILDING, ARCHIVING = 1, 0, -1
---- end codes

local sale = KEYS[1]
local token, lease = ARGV[1], tonumber(ARGV[2])

if redis.call('HEXISTS', sale, 'archived') == 1 then return ARCHIVING end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local c = redis.call('HGET', sale, 'closed')
if c then
  local holder, at = string.match(c, '^(%S+) (%d+)$')
  if holder ~= token and at and now - tonumber(at) < lease then return REBUILDING end
end
redis.call('HSET', sale, 'closed', token .. ' ' .. now)
return CLOSED_NOW
