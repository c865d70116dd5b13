package codes

import (
	"testing"

	"seckill/internal/stock"
	"seckill/internal/stock/scripttest"
)

// The package's scripts hold to their sources and to their codes
// (internal/stock/scripttest).
func TestScripts(t *testing.T) {
	scripttest.Check(t, map[string]*stock.Script{"put.lua": putScript, "revoke.lua": revokeScript}, nil)
}
