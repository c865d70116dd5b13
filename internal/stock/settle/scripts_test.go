package settle

import (
	"testing"

	"seckill/internal/stock"
	"seckill/internal/stock/scripttest"
)

// The package's scripts hold to their sources and to their codes
// (internal/stock/scripttest).
func TestScripts(t *testing.T) {
	scripttest.Check(t, map[string]*stock.Script{"rollback.lua": rollbackScript, "claim.lua": claimScript,
		"settle.lua": settleScript, "return.lua": returnScript, "forget.lua": forgetScript, "stale.lua": staleScript,
		"join.lua": joinScript, "read.lua": readScript, "leave.lua": leaveScript}, nil)
}
