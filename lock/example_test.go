package lock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testutil"
	"seckill/lock"
)

// The examples run against real redis-servers that TestMain starts: one at
// redisAddr, and three independent masters for Redlock.
var (
	redisAddr    string
	redlockAddrs []string
)

func TestMain(m *testing.M) {
	// go-redis logs each failed dial; the tests kill servers on purpose.
	redis.SetLogger(quietLogger{})
	var stops []func()
	srv, stop := testutil.StartRedisMain()
	redisAddr, stops = srv.Addr, append(stops, stop)
	for range 3 {
		srv, stop := testutil.StartRedisMain("--appendonly", "yes", "--appendfsync", "always")
		redlockAddrs, stops = append(redlockAddrs, srv.Addr), append(stops, stop)
	}
	code := m.Run()
	for _, stop := range stops {
		stop()
	}
	os.Exit(code)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// A lock around a purchase: one buyer at a time per user and product.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lock.New(rdb)
	defer locks.Close()

	l, err := locks.Obtain(ctx, "shop:{user:7:sku:42}:buy", 5*time.Second, nil)
	if err != nil {
		fmt.Println("busy:", errors.Is(err, lock.ErrNotObtained))
		return
	}
	defer l.Release(ctx)

	// A second buyer with the same user and product is turned away.
	_, err = locks.Obtain(ctx, "shop:{user:7:sku:42}:buy", 5*time.Second, nil)
	fmt.Println("second buyer busy:", errors.Is(err, lock.ErrNotObtained))
	// Output:
	// second buyer busy: true
}

// Waiting for a busy lock: retry with backoff until a deadline. Waiters wake
// as soon as the holder releases; the backoff is only the backstop.
func ExampleClient_Obtain() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lock.New(rdb)
	defer locks.Close()

	held, _ := locks.Obtain(ctx, "report", time.Minute, nil)
	go func() {
		// The holder works a while, then releases: what the example shows.
		time.Sleep(50 * time.Millisecond)
		held.Release(ctx)
	}()

	wait := &lock.Options{Retry: lock.ExponentialBackoff(10*time.Millisecond, time.Second)}
	l, err := locks.Obtain(ctx, "report", time.Minute, wait)
	fmt.Println("obtained after the release:", err == nil)
	defer l.Release(ctx)

	// A deadline that passes first: the error tells a timeout from a busy lock.
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = locks.Obtain(tctx, "report", time.Minute, wait)
	fmt.Println("not obtained:", errors.Is(err, lock.ErrNotObtained), "timed out:", errors.Is(err, context.DeadlineExceeded))

	// A bounded wait without a deadline: busy, not a timeout.
	bounded := &lock.Options{Retry: lock.LimitWait(lock.LinearBackoff(10*time.Millisecond), 50*time.Millisecond)}
	_, err = locks.Obtain(ctx, "report", time.Minute, bounded)
	fmt.Println("not obtained:", errors.Is(err, lock.ErrNotObtained), "timed out:", errors.Is(err, context.DeadlineExceeded))
	// Output:
	// obtained after the release: true
	// not obtained: true timed out: true
	// not obtained: true timed out: false
}

// The watchdog renews the lock every TTL/3 while the holder works for longer
// than the TTL. The holder's context ends as soon as the lock is lost.
func ExampleLock_Context() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lock.New(rdb)
	defer locks.Close()

	l, err := locks.Obtain(ctx, "rebuild-index", 300*time.Millisecond, &lock.Options{Watchdog: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	work := l.Context()
	select {
	case <-time.After(time.Second): // three TTLs of work
		fmt.Println("still held after 1s:", work.Err() == nil)
	case <-work.Done():
		fmt.Println("lost:", context.Cause(work))
	}

	// Someone deletes the key: the next renewal is refused.
	rdb.Del(ctx, "rebuild-index")
	<-work.Done()
	fmt.Println("cause:", context.Cause(work))
	fmt.Println("release:", l.Release(ctx))
	// Output:
	// still held after 1s: true
	// cause: lock: lost: renewal refused
	// release: release lock rebuild-index: lock: not held
}

// A reentrant lock: a function holding it may call another that takes it
// too. The owner travels in the context.
func ExampleClient_ObtainReentrant() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lock.New(rdb)
	defer locks.Close()

	var restock func(ctx context.Context, depth int) error
	restock = func(ctx context.Context, depth int) error {
		l, err := locks.ObtainReentrant(ctx, "sku:42:stock", time.Minute, nil)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		holds, _ := locks.Holds(ctx, "sku:42:stock")
		fmt.Println("depth", depth, "holds", holds, "fence", l.Fence())
		if depth < 3 {
			return restock(l.Context(), depth+1)
		}
		// A stranger, with an owner of its own, is refused meanwhile.
		_, err = locks.ObtainReentrant(lock.WithOwner(context.Background()), "sku:42:stock", time.Minute, nil)
		fmt.Println("stranger busy:", errors.Is(err, lock.ErrNotObtained))
		return nil
	}
	if err := restock(lock.WithOwner(context.Background()), 1); err != nil {
		fmt.Println(err)
	}
	fmt.Println("free again:", rdb.Exists(context.Background(), "sku:42:stock").Val() == 0)
	// Output:
	// depth 1 holds 1 fence 1
	// depth 2 holds 2 fence 1
	// depth 3 holds 3 fence 1
	// stranger busy: true
	// free again: true
}

// Redlock over independent masters: the lock holds while a majority (here 2
// of 3) holds it. Run the masters with appendfsync always.
func ExampleNewRedlock() {
	ctx := context.Background()
	var masters []redis.UniversalClient
	for _, addr := range redlockAddrs {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		masters = append(masters, rdb)
	}
	locks := lock.NewRedlock(masters, nil)
	defer locks.Close()

	// Retry for a while: an attempt can fail on a slow master, too.
	retry := &lock.Options{Retry: lock.LimitWait(lock.ExponentialBackoff(10*time.Millisecond, 100*time.Millisecond), 2*time.Second)}
	l, err := locks.Obtain(ctx, "settle:2030-01-01", 10*time.Second, retry)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("fence:", l.Fence(), "valid for about 10s:", time.Until(l.Deadline()) > 9*time.Second)
	fmt.Println("release:", l.Release(ctx))

	l, err = locks.Obtain(ctx, "settle:2030-01-01", 10*time.Second, retry)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("next fence:", l.Fence())
	l.Release(ctx)
	// Output:
	// fence: 1 valid for about 10s: true
	// release: <nil>
	// next fence: 2
}

// A fenced write: the store keeps the highest fencing token it accepted and
// refuses a lower one, so a holder that paused past its lease cannot
// overwrite its successor's work. Here the store is a Redis hash.
func ExampleLock_Fence() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lock.New(rdb)
	defer locks.Close()

	// KEYS[1] the guarded hash (fence, value); ARGV[1] token, ARGV[2] value.
	// Returns 1 when written, 0 when refused.
	fencedSet := redis.NewScript(`
if tonumber(ARGV[1]) < tonumber(redis.call("HGET", KEYS[1], "fence") or "0") then
	return 0
end
redis.call("HSET", KEYS[1], "fence", ARGV[1], "value", ARGV[2])
return 1`)

	old, _ := locks.Obtain(ctx, "price:42", 50*time.Millisecond, nil)
	// A long GC pause: the lease runs out (the behaviour the example shows).
	time.Sleep(100 * time.Millisecond)
	next, _ := locks.Obtain(ctx, "price:42", time.Minute, nil)

	ok, _ := fencedSet.Run(ctx, rdb, []string{"price:42:value"}, next.Fence(), "99").Int()
	fmt.Println("new holder, fence", next.Fence(), "written:", ok == 1)
	ok, _ = fencedSet.Run(ctx, rdb, []string{"price:42:value"}, old.Fence(), "100").Int()
	fmt.Println("old holder, fence", old.Fence(), "written:", ok == 1)
	next.Release(ctx)
	// Output:
	// new holder, fence 2 written: true
	// old holder, fence 1 written: false
}

// A fenced write to MySQL: the row remembers the highest token that wrote
// it, and the guarded UPDATE matches no row for a lower one. (Compiled, not
// run: the tests have no MySQL.)
//
//	ALTER TABLE product ADD COLUMN fence BIGINT NOT NULL DEFAULT 0;
//
//	UPDATE product SET price = ?, fence = ?
//	WHERE id = ? AND fence <= ?;   -- 0 rows affected: a stale holder
//
// Use "fence < ?" instead when each acquisition writes the row only once.
func ExampleLock_Fence_mySQL() {
	ctx := context.Background()
	db, err := sql.Open("mysql", os.Getenv("MYSQL_DSN"))
	if err != nil {
		return
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lock.New(rdb)
	defer locks.Close()
	l, err := locks.Obtain(ctx, "product:42", 10*time.Second, nil)
	if err != nil {
		return
	}
	defer l.Release(ctx)

	res, err := db.ExecContext(ctx,
		"UPDATE product SET price = ?, fence = ? WHERE id = ? AND fence <= ?",
		9900, l.Fence(), 42, l.Fence())
	if err != nil {
		return
	}
	if n, _ := res.RowsAffected(); n == 0 {
		fmt.Println("refused: a later holder has written this row")
	}
}

// Periodic jobs on many replicas: every replica calls RunOnce on its ticker,
// and one of them runs the job each period.
func ExampleClient_RunOnce() {
	ctx := context.Background()
	var replicas []*lock.Client
	for range 3 {
		rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
		defer rdb.Close()
		locks := lock.New(rdb)
		defer locks.Close()
		replicas = append(replicas, locks)
	}
	runs := 0
	for _, r := range replicas {
		_, err := r.RunOnce(ctx, "job:close-expired-orders", time.Hour, func(ctx context.Context, period time.Time) error {
			runs++
			return nil
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("runs this hour:", runs)
	// Output:
	// runs this hour: 1
}

// A lock taken inside a script of your own (here with the stock reservation
// it guards), then handed to this package to release; a second buyer waits
// for the release message and tries its script again.
func ExampleClient_Adopt() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lock.New(rdb)
	defer locks.Close()

	// KEYS[1] lock, KEYS[2] stock; ARGV[1] token, ARGV[2] TTL in ms.
	// Returns the stock left, or -1 when the lock is busy.
	reserve := redis.NewScript(`
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return -1
end
return redis.call("DECR", KEYS[2])`)
	keys := []string{"sku:7:reserve", "sku:7:stock"}
	rdb.Set(ctx, "sku:7:stock", 10, 0)

	token := lock.NewToken()
	left, _ := reserve.Run(ctx, rdb, keys, token, 5000).Int()
	first := locks.Adopt("sku:7:reserve", token, 5*time.Second)
	fmt.Println("first buyer, stock left:", left)

	done := make(chan struct{})
	go func() {
		defer close(done)
		token := lock.NewToken()
		for {
			left, _ := reserve.Run(ctx, rdb, keys, token, 5000).Int()
			if left >= 0 {
				fmt.Println("second buyer, stock left:", left)
				locks.Adopt("sku:7:reserve", token, 5*time.Second).Release(ctx)
				return
			}
			wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			locks.WaitRelease(wctx, "sku:7:reserve") // woken, or the backoff passed
			cancel()
		}
	}()
	// The first holder releases while the other waits: what the example shows.
	time.Sleep(20 * time.Millisecond)
	first.Release(ctx)
	<-done
	// Output:
	// first buyer, stock left: 9
	// second buyer, stock left: 8
}
