package lock

import (
	"flag"
	"testing"

	"seckill/internal/luafile"
)

var update = flag.Bool("update", false, "rewrite the copied sections of the .lua files (go generate)")

// Each script file holds the parts it copies as they are, and reads its KEYS and ARGV
// in its head only (internal/luafile).
func TestScriptFiles(t *testing.T) {
	luafile.Check(t, ".", luafile.Sources{}, *update)
}
