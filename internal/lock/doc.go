// Package lock provides distributed locks on Redis: a mutex with owner tokens
// and fencing tokens, waiters woken by a release message rather than polling,
// a watchdog that renews a lock while its holder works, a reentrant lock, and
// Redlock over several independent Redis servers.
package lock
