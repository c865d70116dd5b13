package lifecycle

import (
	"testing"

	"seckill/internal/stock"
	"seckill/internal/stock/scripttest"
)

// The package's scripts hold to their sources and to their codes
// (internal/stock/scripttest).
func TestScripts(t *testing.T) {
	scripttest.Check(t, map[string]*stock.Script{"mark.lua": markScript, "close.lua": closeScript, "reopen.lua": reopenScript, "rebuild.lua": rebuildScript, "keep_allowance.lua": keepAllowanceScript, "adopt.lua": adoptScript}, nil)
}
