// Package scripttest holds a package of internal/stock's families to the rules of its
// Lua scripts, in its own tests: each .lua file as its sources have it (its parts from
// internal/stock, its codes and what else Go writes for it), KEYS and ARGV read in
// heads only, and each script to its table of codes.
package scripttest

import (
	"context"
	"errors"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/internal/luafile"
	"seckill/internal/stock"
	"seckill/internal/testutil"
)

// update rewrites the sections instead of failing on them: go generate runs a package's
// TestScripts with -update.
var update = flag.Bool("update", false, "rewrite the generated sections of the .lua files (go generate)")

var (
	luaConstant = regexp.MustCompile(`\b[A-Z][A-Z_]+\b`)
	luaDefined  = regexp.MustCompile(`(?m)^local ([A-Z][A-Z_]*(?:, [A-Z][A-Z_]*)*) =`)
)

// Check checks the scripts of the package whose tests call it (its folder; the parts in
// internal/stock, its parent): scripts are all of them by file, generated what Go
// writes into their sections besides each script's codes (nil for nothing). With
// -update it rewrites the sections (go generate) instead of failing on them.
func Check(t *testing.T, scripts map[string]*stock.Script, generated func(file, name string) (string, bool)) {
	t.Helper()
	embedded, err := luafile.Embedded(".")
	if err != nil {
		t.Fatal(err)
	}
	for f := range embedded {
		if scripts[f] == nil {
			t.Errorf("%s is embedded but not among the scripts checked", f)
		}
	}
	for f := range scripts {
		if !embedded[f] {
			t.Errorf("script %s is not a file the package embeds", f)
		}
	}
	luafile.Check(t, ".", luafile.Sources{Parts: []string{".."}, Generated: func(file, name string) (string, bool) {
		if s := scripts[file]; name == "codes" && s != nil && len(s.Codes()) > 0 {
			return stock.CodesLua(s.Codes()), true
		}
		if generated != nil {
			return generated(file, name)
		}
		return "", false
	}}, *update)
	rdb := testutil.StartRedis(t).Client(t)
	for name, s := range scripts {
		t.Run(name, func(t *testing.T) { checkScript(t, rdb, s) })
	}
}

// checkScript holds s to its codes: one name and one value per code, which Lua reads as
// Go has them and CodeOf finds (and no other value); every constant s uses is defined
// once in it, and every code of its table is one it answers with.
func checkScript(t *testing.T, rdb *redis.Client, s *stock.Script) {
	codes, names := map[int64]bool{}, map[string]bool{}
	var all []string
	var want []int64
	for _, c := range s.Codes() {
		if codes[c.Value] || names[c.Lua] {
			t.Errorf("code %d %s: value or name used twice", c.Value, c.Lua)
		}
		codes[c.Value], names[c.Lua] = true, true
		all, want = append(all, c.Lua), append(want, c.Value)
		got, err := stock.CodeOf(s.Codes(), c.Value)
		if err != nil || got.Lua != c.Lua || !errors.Is(stock.AnswerOf(s.Codes(), c.Value), c.Err) {
			t.Errorf("CodeOf(%d) = %v, %v, want %s", c.Value, got, err, c.Lua)
		}
	}
	if _, err := stock.CodeOf(s.Codes(), 99); err == nil {
		t.Error("CodeOf(99) is no error")
	}
	if len(all) > 0 {
		got, err := rdb.Eval(context.Background(), stock.CodesLua(s.Codes())+"return {"+strings.Join(all, ", ")+"}", nil).Int64Slice()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Lua reads the codes as %v (%v), want %v", got, err, want)
		}
	}
	f, err := luafile.Parse(s.Src())
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]int{}
	for _, m := range luaDefined.FindAllStringSubmatch(luafile.Stripped(s.Src()), -1) {
		for _, n := range strings.Split(m[1], ", ") {
			defined[n]++
		}
	}
	for n, times := range defined {
		if times > 1 {
			t.Errorf("%s is defined %d times", n, times)
		}
	}
	used := map[string]bool{}
	for _, c := range luaConstant.FindAllString(luafile.Stripped(f.Own), -1) {
		if c == "KEYS" || c == "ARGV" || c == "ARG" {
			continue
		}
		used[c] = true
		if defined[c] == 0 {
			t.Errorf("the script uses %s, which it does not define", c)
		}
	}
	for n := range names {
		if !used[n] {
			t.Errorf("the script never answers %s", n)
		}
	}
}
