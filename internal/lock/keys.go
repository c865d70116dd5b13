package lock

import (
	"strings"
	"time"
)

// The names of every Redis key and channel this package uses are built here.
// A lock named key owns the key itself (the token, or the reentrant hash), a
// fence counter and a release channel. The fence key and the channel share the
// key's Redis Cluster hash tag, so a script that touches the lock and its
// counter stays in one slot:
//
//	key                         fence key                     release channel
//	seckill:{user:7}:lock       seckill:{user:7}:lock:fence   seckill:{user:7}:lock:released
//	job:nightly                 {job:nightly}:fence           {job:nightly}:released
//
// A key without a hash tag is wrapped in one, which hashes to the key's own
// slot. A key with a '}' but no tag is used as is; give such keys a tag when
// running on a Cluster.

// ReleaseChannel returns the pub/sub channel on which a release of key is
// published. Every release by this package publishes an empty message there;
// a script of your own that deletes a lock key should do the same, so that
// waiters wake at once instead of at their next backoff.
func ReleaseChannel(key string) string { return related(key, ":released") }

// fenceKey returns the counter that numbers the acquisitions of key. It never
// expires: a fencing token must keep growing across lock lifetimes.
func fenceKey(key string) string { return related(key, ":fence") }

// related names a key that shares key's hash slot.
func related(key, suffix string) string {
	if hasHashTag(key) || strings.IndexByte(key, '}') >= 0 {
		return key + suffix
	}
	return "{" + key + "}" + suffix
}

// hasHashTag reports whether Redis Cluster hashes only part of key: the
// non-empty text between the first '{' and the first '}' after it.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	return strings.IndexByte(key[open+1:], '}') > 0
}

// lastRunKey holds the number of the last period in which RunOnce ran the
// job name with that period. It expires after three idle periods.
func lastRunKey(name string, period time.Duration) string {
	return name + ":lastrun:" + period.String()
}
