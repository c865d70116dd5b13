package stock

import (
	goflag "flag"
	"os"
	"strings"
	"testing"

	"seckill/internal/luafile"
)

var update = goflag.Bool("update", false, "rewrite the generated sections of the .lua files (go generate)")

// generated is what Go writes into the sections of this package's parts: the reserve
// script's reply codes, which the per-user rule answers with too, and the buyers' field
// marks.
func generated(file, name string) (string, bool) {
	switch {
	case file == "replies.lua" && name == "codes":
		return repliesLua(), true
	case file == "buyer_fields.lua" && name == "marks":
		return marksLua(), true
	}
	return "", false
}

// Each part holds its generated sections as Go writes them, and reads neither KEYS nor
// ARGV (internal/luafile); the scripts that copy the parts are checked in their own
// packages (internal/stock/scripttest).
func TestScriptFiles(t *testing.T) {
	luafile.Check(t, ".", luafile.Sources{Generated: generated}, *update)
}

// parts returns the text of parts of this folder, one after the other, for the tests
// that run a part's functions on a real Redis.
func parts(t *testing.T, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		text, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(text)
	}
	return b.String()
}
