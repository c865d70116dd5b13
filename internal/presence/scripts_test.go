package presence

import (
	"testing"

	"seckill/internal/luafile"
)

// Each script file reads its KEYS and ARGV in its head only (internal/luafile).
func TestScriptFiles(t *testing.T) {
	luafile.Check(t, ".", luafile.Sources{}, false)
}
