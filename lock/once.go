package lock

import (
	"context"
	_ "embed"
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

// claimPeriodScript claims a period for a job when no later or equal period was
// claimed (claim_period.lua).
//
//go:embed claim_period.lua
var claimPeriodLua string
var claimPeriodScript = redis.NewScript(claimPeriodLua)
