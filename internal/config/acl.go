package config

import "strings"

// ACLPart is one part of the Redis ACL rule the service's user needs, and why.
type ACLPart struct {
	Rule string // ACL SETUSER syntax
	Why  string
}

// RedisACL is the least the service's Redis user needs, both binaries together: its
// keys and channels, and every command they send, the ones inside their Lua scripts
// and asynq's included (Redis checks a script's commands against the user too). No
// administrative command (CONFIG, KEYS, SCAN, FLUSHALL, DEBUG, MONITOR, SAVE, CLIENT,
// ...) is in it: nothing at run time needs one. docs/connecting.md shows it.
var RedisACL = []ACLPart{
	{"resetkeys ~seckill:* ~asynq:*",
		"keys: the service's own (`seckill:{act:N}:...`, hash-tagged per sale, and `seckill:{presence}:...`) and the order queue's (`asynq:...`)"},
	{"resetchannels &seckill:* &asynq:*",
		"pub/sub channels: lock releases and returned stock (`seckill:...`), asynq's task cancellations (`asynq:cancel`)"},
	{"-@all", "nothing else: every command below is named"},
	{"+ping", "health checks: /readyz, the pub/sub connections' keep-alive, asynq's start"},
	{"+command", "a cluster client reads the commands' key positions once (COMMAND)"},
	{"+evalsha +eval",
		"every step that touches several keys is a Lua script (reserve, settle, expire, locks, waiting room, heartbeats, asynq's queue): EVALSHA, and EVAL once after a server lost its script cache"},
	{"+get +set +setnx +setex +incr +decr +del +unlink +exists +expire +expireat +pexpire +persist +pttl +rename",
		"strings and key lifetimes: locks with their time to live, counters, idempotency records, asynq's task state"},
	{"+hget +hmget +hset +hsetnx +hdel +hexists +hgetall +hincrby +hlen +hvals +hscan",
		"hashes: a sale's stock and users, orders, group-buy groups, heartbeats, asynq's tasks; a rebuild pages through a sale's users"},
	{"+sadd +srem +sismember +smembers", "sets: orders claimed by a worker, a buyer's queued orders, asynq's queue and server lists"},
	{"+zadd +zrem +zcard +zscore +zrank +zcount +zrange +zrangebyscore +zrevrange +zpopmin +zremrangebyrank +zremrangebyscore",
		"sorted sets: pay windows and expiry, the waiting room's line, lock waiters, asynq's scheduled, retry and done tasks"},
	{"+lpush +rpush +lrange +llen +lrem +rpoplpush", "lists: asynq's pending and active tasks"},
	{"+publish +subscribe +unsubscribe", "pub/sub: a released lock wakes its waiters, returned stock reopens a sold-out sale, asynq's cancellations"},
	{"+multi +exec +discard +watch +unwatch", "transactions: a sale's snapshot and patches read and written at once"},
	{"+time", "Redis' clock, which judges sale windows and pay windows, whatever the instances' clocks say"},
	{"+wait", "SECKILL_REDIS_MIN_REPLICAS: a purchase waits for its replicas"},
	{"+info", "the API's start reads INFO persistence of each master (AOF on: SECKILL_REDIS_DURABILITY); with SECKILL_REDIS_MIN_REPLICAS, the seckill_redis_connected_replicas metric reads INFO replication of each master (refused, the metric stays empty and one warning is logged)"},
	{"+cluster|slots +asking", "Redis Cluster: the client reads the slots' masters and follows ASK during a slot's migration"},
	{"+memory|usage", "asynq's queue statistics, behind the worker's seckill_queue_depth metric"},
}

// RedisSentinelACL is what the service's user needs on a Sentinel: the client asks for
// the master's address and the other Sentinels, and listens for +switch-master.
const RedisSentinelACL = "resetchannels &* -@all +ping +sentinel|get-master-addr-by-name +sentinel|sentinels +sentinel|replicas +subscribe +unsubscribe"

// RedisACLRule is RedisACL as one rule, for ACL SETUSER or a users.acl line.
func RedisACLRule() string {
	parts := make([]string, len(RedisACL))
	for i, p := range RedisACL {
		parts[i] = p.Rule
	}
	return strings.Join(parts, " ")
}
