package stock

import (
	"context"
	"errors"
	goflag "flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"seckill/internal/luafile"
	"seckill/internal/testutil"
)

var update = goflag.Bool("update", false, "rewrite the generated sections of the .lua files (go generate)")

// scripts are the package's scripts (script), by file, or by name for those still
// assembled in Go: TestScripts reads each one.
var scripts = map[string]*Script{
	"rollback.lua": rollbackScript, "claim.lua": claimScript, "forget.lua": forgetScript, "stale.lua": staleScript,
	"settle": settleScript, "return": returnScript, "join": joinScript, "read": readScript, "leave": leaveScript,
}

// generated is what Go writes into the sections of the package's .lua files: each
// script's codes, the reserve script's replies and layout, the buyers' marks.
func generated(file, name string) (string, bool) {
	switch {
	case file == "replies.lua" && name == "codes":
		return repliesLua(), true
	case file == "buyer_fields.lua" && name == "marks":
		return marksLua(), true
	case name == "codes":
		if s, ok := scripts[file]; ok && len(s.codes) > 0 {
			return CodesLua(s.codes), true
		}
	}
	return "", false
}

// Each .lua file holds its parts and its generated sections as their sources have them,
// and reads KEYS and ARGV in its head only (internal/luafile).
func TestScriptFiles(t *testing.T) {
	luafile.Check(t, ".", luafile.Sources{Generated: generated}, *update)
}

var (
	luaConstant = regexp.MustCompile(`\b[A-Z][A-Z_]+\b`)
	luaDefined  = regexp.MustCompile(`(?m)^local ([A-Z][A-Z_]*(?:, [A-Z][A-Z_]*)*) =`)
	luaPosition = regexp.MustCompile(`\b(KEYS|ARGV)\b`)
)

// Each script's table of codes has one name and one value per code, which Lua reads as
// Go has them; every constant a script uses is defined once in it, and every code of
// its table is one it answers with; codeOf finds each code, and no other value; and a
// script assembled in Go reads KEYS and ARGV in its head only.
func TestScripts(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	made := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(f, "_test.go") {
			made += strings.Count(string(src), "Script = NewScript(") + strings.Count(string(src), "Script = assembled(")
		}
	}
	if made != len(scripts) {
		t.Errorf("the package makes %d scripts, the test reads %d", made, len(scripts))
	}
	for name, s := range scripts {
		t.Run(name, func(t *testing.T) {
			own := s.head + s.body
			if s.head == "" { // a file: TestScriptFiles holds it to the rule of names
				f, err := luafile.Parse(s.src)
				if err != nil {
					t.Fatal(err)
				}
				own = f.Own
			} else {
				if luaPosition.MatchString(s.body) {
					t.Errorf("the body reads KEYS or ARGV: %s", luaPosition.FindString(s.body))
				}
				if !luaPosition.MatchString(s.head) {
					t.Errorf("the head names neither KEYS nor ARGV")
				}
			}
			codes, names := map[int64]bool{}, map[string]bool{}
			var all []string
			var want []int64
			for _, c := range s.codes {
				if codes[c.Value] || names[c.Lua] {
					t.Errorf("code %d %s: value or name used twice", c.Value, c.Lua)
				}
				codes[c.Value], names[c.Lua] = true, true
				all, want = append(all, c.Lua), append(want, c.Value)
				got, err := CodeOf(s.codes, c.Value)
				if err != nil || got.Lua != c.Lua || !errors.Is(AnswerOf(s.codes, c.Value), c.Err) {
					t.Errorf("codeOf(%d) = %v, %v, want %s", c.Value, got, err, c.Lua)
				}
			}
			if _, err := CodeOf(s.codes, 99); err == nil {
				t.Error("codeOf(99) is no error")
			}
			if len(all) > 0 {
				got, err := rdb.Eval(ctx, CodesLua(s.codes)+"return {"+strings.Join(all, ", ")+"}", nil).Int64Slice()
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("Lua reads the codes as %v (%v), want %v", got, err, want)
				}
			}

			defined := map[string]int{}
			for _, m := range luaDefined.FindAllStringSubmatch(luafile.Stripped(s.src), -1) {
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
			for _, c := range luaConstant.FindAllString(luafile.Stripped(own), -1) {
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
		})
	}
}
