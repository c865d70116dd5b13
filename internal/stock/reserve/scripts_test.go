package reserve

import (
	"testing"

	"seckill/internal/stock"
	"seckill/internal/stock/scripttest"
)

// The package's scripts hold to their sources and to their codes
// (internal/stock/scripttest).
func TestScripts(t *testing.T) {
	scripttest.Check(t, map[string]*stock.Script{"reserve.lua": reserveScript, "release_locks.lua": releaseLocksScript, "hold_lock.lua": holdLockScript}, generated)
}

// generated is the reserve script's layout, which Go writes from callKeys and the rest.
func generated(file, name string) (string, bool) {
	if file == "reserve.lua" && name == "layout" {
		return layoutLua(), true
	}
	return "", false
}
