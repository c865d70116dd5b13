package outage

import (
	"flag"
	"testing"

	"seckill/internal/luafile"
)

var update = flag.Bool("update", false, "rewrite the copied sections of the .lua files (go generate)")

// Each script file holds the part it copies (spans.lua) as it is, and reads its KEYS and
// ARGV in its head only (internal/luafile).
func TestScriptFiles(t *testing.T) {
	luafile.Check(t, ".", luafile.Sources{}, *update)
}
