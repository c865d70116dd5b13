package lock

import (
	"strings"
	"time"
)

// The names of every Redis key and channel this package uses are built here.
// A lock named key owns the key itself (the token, or the reentrant hash), a
// fence counter, a list of waiting Clients and a release channel. They share
// the key's Redis Cluster hash tag, so a script that touches the lock and the
// others stays in one slot:
//
//	key                 fence key                waiters key                release channel
//	shop:{user:7}:buy   shop:{user:7}:buy:fence  shop:{user:7}:buy:waiters  shop:{user:7}:buy:released
//	job:nightly         {job:nightly}:fence      {job:nightly}:waiters      {job:nightly}:released
//
// A key without a hash tag is wrapped in one, which hashes to the key's own
// slot. A key with a '}' but no tag is used as is; give such keys a tag when
// running on a Cluster.

// ReleaseChannel returns the pub/sub channel on which a release of key is
// published. A script of your own that deletes a lock key should publish an
// empty message there, so that waiters wake at once instead of at their next
// backoff (this package's own releases name the waiter to wake; see
// listing.go).
func ReleaseChannel(key string) string { return related(key, ":released") }

// waitersKey returns the sorted set that lists the Clients waiting for key
// (see listing.go).
func waitersKey(key string) string { return related(key, ":waiters") }

// WaitersKey returns the sorted set that lists the Clients waiting for key. A script of
// your own that releases a lock kept elsewhere than in key itself (a field of a hash,
// say), on which callers wait with WaitRelease(key), publishes on ReleaseChannel(key)
// when this key exists: WaitRelease lists its Client there first, and a lock nobody
// waits for then costs no message.
func WaitersKey(key string) string { return waitersKey(key) }

// fenceKey returns the counter that numbers the acquisitions of key. It never
// expires: a fencing token must keep growing across lock lifetimes.
func fenceKey(key string) string { return related(key, ":fence") }

// related names a key that shares key's hash slot. A key with a '}' is used as
// is: it has a hash tag, or it is used as is anyway (see above).
func related(key, suffix string) string {
	if strings.IndexByte(key, '}') >= 0 {
		return key + suffix
	}
	return "{" + key + "}" + suffix
}

// hashSlotOf returns what Redis Cluster hashes of key: its hash tag (the
// non-empty text between the first '{' and the first '}' after it), or else
// the whole key.
func hashSlotOf(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key[open+1 : open+1+end]
		}
	}
	return key
}

// lastRunKey holds the number of the last period in which RunOnce ran the
// job name with that period. It expires after three idle periods.
func lastRunKey(name string, period time.Duration) string {
	return name + ":lastrun:" + period.String()
}
