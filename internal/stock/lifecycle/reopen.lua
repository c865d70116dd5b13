-- Ends the closing of a bucket, if it is still this rebuild's.
--
-- KEYS[1] sale: a bucket's sale hash  ARGV[1] token: the rebuild's token
--
-- Sales.Reopen and Sales.Rebuild run it (rebuild.go).

local sale, token = KEYS[1], ARGV[1]

local c = redis.call('HGET', sale, 'closed')
if c and string.match(c, '^(%S+)') == token then redis.call('HDEL', sale, 'closed') end
return 0
