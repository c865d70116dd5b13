package funnel

import (
	"flag"
	"testing"

	"seckill/internal/luafile"
)

var update = flag.Bool("update", false, "rewrite the copied sections of the .lua files (go generate)")

// The flush script holds internal/stock's sale_live.lua as it is, and reads its KEYS and
// ARGV in its head only (internal/luafile).
func TestScriptFiles(t *testing.T) {
	luafile.Check(t, ".", luafile.Sources{Parts: []string{"../stock"}}, *update)
}
