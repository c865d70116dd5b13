package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RunOnce runs job if no caller has run the job named name in the current
// period yet, and reports whether it ran. Periods are aligned to the wall
// clock (time.Truncate): with period time.Hour, one run per clock hour among
// all the replicas that call RunOnce, whichever calls first; the others skip.
// job gets the start of its period.
//
// The claim is a counter of the last period run, so an instance whose clock
// lags behind cannot run a period that is already done, and a job that fails
// is not run again in the same period. A job that may outlast its period and
// must not overlap the next run should also hold a lock (Obtain with a
// watchdog).
func (c *Client) RunOnce(ctx context.Context, name string, period time.Duration,
	job func(ctx context.Context, periodStart time.Time) error) (bool, error) {
	if period < time.Millisecond {
		return false, fmt.Errorf("lock: period %v is shorter than 1ms", period)
	}
	start := c.now().Truncate(period)
	number := start.UnixMilli() / period.Milliseconds()
	claimed, err := scriptResult(ctx, c.rdb, claimPeriodScript, []string{lastRunKey(name, period)},
		number, (3 * period).Milliseconds())
	if err != nil {
		return false, fmt.Errorf("claim %s for %v: %w", name, start, err)
	}
	if claimed == 0 {
		return false, nil
	}
	if err := job(ctx, start); err != nil {
		return true, fmt.Errorf("run %s for %v: %w", name, start, err)
	}
	return true, nil
}

// claimPeriodScript claims a period for a job when no later or equal period
// was claimed.
//
//	KEYS[1] last period run   ARGV[1] period number   ARGV[2] TTL in milliseconds
//
// Returns 1 when claimed, 0 when the period or a later one was claimed before.
var claimPeriodScript = redis.NewScript(`
local last = tonumber(redis.call("GET", KEYS[1]) or "-1")
if last >= tonumber(ARGV[1]) then
	return 0
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 1
`)
