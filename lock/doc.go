// Package lock provides distributed locks on Redis: a mutex with owner tokens
// and fencing tokens, waiters woken by a release message rather than by
// polling, a watchdog that renews a lock while its holder works, a reentrant
// lock, Redlock over several independent Redis masters, and RunOnce for
// periodic jobs that one replica of many must run. It works on one Redis,
// Sentinel or a Cluster through any redis.UniversalClient of
// github.com/redis/go-redis/v9, its only dependency. Each feature has a
// runnable example (the examples run against a real redis-server in go test).
//
//	locks := lock.New(rdb) // one Client per process
//	defer locks.Close()
//	l, err := locks.Obtain(ctx, "order:{42}", 10*time.Second, nil)
//	if errors.Is(err, lock.ErrNotObtained) {
//		// someone else holds it
//	}
//	defer l.Release(ctx)
//
// README.md beside this file says how another module requires it.
//
// # Mutex
//
// Client.Obtain sets the key to a random owner token with SET NX PX, so the
// stored value is exactly the token (another script may take the same lock
// with SET key token NX PX ttl; see Client.Adopt). Release and Extend are Lua
// compare-and-act scripts: nobody releases or extends a lock that is not
// theirs. Client.ReleaseAll releases many locks with one script per hash slot.
// The errors say
// what happened:
//
//   - ErrNotObtained: the lock is busy. When the context ended first, the
//     error also matches ctx.Err(), so a timeout and a busy lock can be told
//     apart with errors.Is.
//   - ErrNotHeld: Redis does not hold the lock under our token (it expired,
//     was released, or is someone else's).
//   - ErrLost: a lock we held is known to be gone; it is the cause of the
//     lock's Context.
//
// See Example and ExampleClient_Obtain.
//
// # Waiting
//
// Options.Retry picks NoRetry, LinearBackoff, ExponentialBackoff (with
// jitter), and LimitWait to bound the total wait. A waiter does not poll: it
// sleeps until a release is published on the key's channel (ReleaseChannel),
// with its backoff only as the backstop. Three things keep a hot lock from
// turning into a storm of attempts:
//
//   - One pub/sub connection per Client, whatever the number of waiters and
//     keys; a key's channel is subscribed while someone waits for it (and for
//     two seconds after), and a waiter's subscription is active before the
//     attempt after which it sleeps, so a release between the two is not
//     missed.
//   - The waiters of one Client for one key queue in the process: only the
//     first waits in Redis, the lock goes to them in turn, and a release by
//     the same Client wakes the next at once.
//   - The Clients that wait are listed beside the lock in Redis, and a
//     release names one of them in its message: one replica tries per
//     release, not every replica (see the benchmark).
//
// WaitRelease lets code that takes a lock in a script of its own wait the same
// way: see ExampleClient_Adopt. WaitRelease lists its caller beside the key, as
// a failed Obtain does, and a release publishes only when someone is listed, so
// a lock taken with every request and waited for by nobody costs no PUBLISH (on
// a Redis Cluster, a message to every node).
//
// # Watchdog and the holder's context
//
// With Options.Watchdog the lock is renewed every TTL/3 while held, so a
// holder may work for longer than the TTL while a crashed holder still loses
// the lock within one TTL. Lock.Context is cancelled as soon as the lock is
// known lost: a renewal refused (the key deleted, or Redis restarted without
// it), or the lease deadline passed on the monotonic clock while Redis did
// not answer; its cause is then ErrLost. Release stops the watchdog and waits
// for a renewal in flight, so nothing renews a lock after its release. See
// ExampleLock_Context.
//
// # Reentrant lock
//
// Client.ObtainReentrant keeps a hash of owner -> holds under the key. Go has
// no thread ids, so the owner travels in the context (WithOwner): acquiring
// again with the same owner counts one more hold and refreshes the TTL,
// each Release gives up one hold, and the key goes with the last. See
// ExampleClient_ObtainReentrant.
//
// # Redlock
//
// NewRedlock offers the same Obtain, Release, Extend, watchdog and fencing
// over N independent masters: a lock holds when a majority (N/2+1) took it
// within its validity, TTL less the time taking it took less the drift
// allowance (TTL/100 + 2ms); each command to a master has its own timeout,
// an attempt that fails is undone on every master, and the commands to each
// master run in order, so a release never overtakes a slow SET. Redlock is
// only safe if the masters keep their data across a crash (appendfsync
// always) or stay out for longer than the TTL after a restart. See
// ExampleNewRedlock.
//
// # Fencing tokens
//
// Every acquisition returns Lock.Fence, a number that strictly increases per
// lock name: an INCR in the same script as the SET on one server; under
// Redlock, one more than the highest counter among the masters that granted
// the lock, written back to them while the lock is still ours. Any two
// majorities share a master, so the next holder reads at least that number:
// tokens keep growing across the quorum while masters fail and return (with
// their data). The store the lock protects refuses a write whose token is
// lower than the last one it accepted: in MySQL with a guarded UPDATE,
//
//	UPDATE product SET price = ?, fence = ? WHERE id = ? AND fence <= ?
//
// which matches no row for a stale holder (use "fence < ?" when each hold
// writes the row once); in Redis with a guarded script. See ExampleLock_Fence
// and ExampleLock_Fence_mySQL. The tests check a history of such fenced
// writes, some by holders that paused past their lease, for linearizability
// with porcupine.
//
// # One replica per period
//
// Client.RunOnce runs a job if no replica has run it in the current period
// yet; the others skip. See ExampleClient_RunOnce.
//
// # Keys and scripts
//
// A lock named key uses the key itself, key:fence (never expires), key:waiters
// and the channel key:released, all in the key's Redis Cluster hash slot (see
// keys.go). Each Lua script is a .lua file beside the Go code that runs it,
// embedded as it stands, with its keys, arguments and replies in its head; the
// functions several share (listing.lua, taking.lua, releasing.lua) are copied
// into each by go generate, which runs
//
//	go test -run '^TestScriptFiles$' -args -update
//
// and the same test, without -update, fails when a copy is stale.
//
// # Tests
//
// The tests start private redis-server processes on free ports and run with
// -race: 100 goroutines contending (never
// two holders), expiry and extend, non-owners refused, the watchdog keeping a
// lock for five TTLs and cancelling the holder's context within one renewal
// interval of a deleted key or a restarted Redis, reentrancy with nested
// calls and concurrent strangers, Redlock over five masters with one then two
// killed with SIGKILL and restarted and with three killed, fencing tokens
// over 10,000 contended acquisitions and across Redlock master loss, and the
// porcupine check of fenced writes. A program in another module that requires
// this one builds and takes a lock (module_test.go).
//
// # Benchmark
//
// bench_test.go races this package against github.com/bsm/redislock and
// github.com/go-redsync/redsync on one private redis-server, uncontended and with
// 16 goroutines or clients on one key:
//
//	go test -run '^$' -bench . -benchtime 2s ./lock/
//
// Under contention the pollers' throughput and wait follow their retry interval,
// whereas here a release wakes the next waiter.
package lock

//go:generate go test -run ^TestScriptFiles$ -args -update
