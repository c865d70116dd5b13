package moves

import (
	"flag"
	"testing"

	"seckill/internal/stock"
	"seckill/internal/stock/scripttest"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the .lua files (go generate)")

// The package's scripts hold to their sources and to their codes
// (internal/stock/scripttest).
func TestScripts(t *testing.T) {
	scripttest.Check(t, map[string]*stock.Script{"take.lua": takeScript, "apply.lua": applyScript}, nil, *update)
}
