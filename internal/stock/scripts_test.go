package stock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"seckill/internal/testutil"
)

// scripts are the package's scripts (script), by name: TestScripts reads each one.
var scripts = map[string]*script{
	"close": closeScript, "reopen": reopenScript, "rebuild": rebuildScript, "keep allowance": keepAllowanceScript,
	"adopt": adoptScript, "rollback": rollbackScript, "claim": claimScript, "settle": settleScript,
	"return": returnScript, "forget": forgetScript, "stale": staleScript, "take": takeScript, "apply": applyScript,
	"fail": failScript, "extend": extendScript, "restore": restoreScript, "barrier": barrierScript, "mark": markScript,
	"join": joinScript, "read": readScript, "leave": leaveScript, "release locks": releaseLocksScript,
	"hold lock": holdLockScript, "put codes": putCodesScript, "revoke code": revokeCodeScript,
}

// fragments are the Lua fragments the scripts share.
var fragments = map[string]string{
	"buyerFields": buyerFieldsLua, "holdings": holdingsLua, "userLimit": userLimitLua, "queued": queuedLua,
	"units": unitsLua, "bumpGen": bumpGenLua, "variants": variantsLua, "variantHoldings": variantHoldingsLua,
	"listGroup": listGroupLua, "saleLive": saleLiveLua, "trimReturned": trimReturnedLua, "entry": entryLua,
	"offer": offerLua, "endOffer": endOfferLua, "saleState": SaleStateLua, "code": CodeLua,
}

var (
	luaQuoted   = regexp.MustCompile(`'[^']*'`)
	luaComment  = regexp.MustCompile(`--[^\n]*`)
	luaConstant = regexp.MustCompile(`\b[A-Z][A-Z_]+\b`)
	luaDefined  = regexp.MustCompile(`(?m)^local ([A-Z][A-Z_]*(?:, [A-Z][A-Z_]*)*) =`)
	luaPosition = regexp.MustCompile(`\b(KEYS|ARGV)\b`)
)

// Each script reads its KEYS and ARGV in its head only, and no fragment reads them; each
// script's table of codes has one name and one value per code, which Lua reads as Go
// has them; every constant a script uses is defined once in it, and every code of its
// table is one it answers with; and codeOf finds each code, and no other value.
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
			made += strings.Count(string(src), "Script = newScript(")
		}
	}
	if made != len(scripts) {
		t.Errorf("the package makes %d scripts, the test reads %d", made, len(scripts))
	}
	for name, f := range fragments {
		if luaPosition.MatchString(f) {
			t.Errorf("fragment %s reads KEYS or ARGV", name)
		}
	}
	for name, s := range scripts {
		t.Run(name, func(t *testing.T) {
			if luaPosition.MatchString(s.body) {
				t.Errorf("the body reads KEYS or ARGV: %s", luaPosition.FindString(s.body))
			}
			if !luaPosition.MatchString(s.head) {
				t.Errorf("the head names neither KEYS nor ARGV")
			}
			codes, names := map[int64]bool{}, map[string]bool{}
			var all []string
			var want []int64
			for _, c := range s.codes {
				if codes[c.code] || names[c.lua] {
					t.Errorf("code %d %s: value or name used twice", c.code, c.lua)
				}
				codes[c.code], names[c.lua] = true, true
				all, want = append(all, c.lua), append(want, c.code)
				got, err := codeOf(s.codes, c.code)
				if err != nil || got.lua != c.lua || !errors.Is(answerOf(s.codes, c.code), c.err) {
					t.Errorf("codeOf(%d) = %v, %v, want %s", c.code, got, err, c.lua)
				}
			}
			if _, err := codeOf(s.codes, 99); err == nil {
				t.Error("codeOf(99) is no error")
			}
			if len(all) > 0 {
				got, err := rdb.Eval(ctx, codesLua(s.codes)+"return {"+strings.Join(all, ", ")+"}", nil).Int64Slice()
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("Lua reads the codes as %v (%v), want %v", got, err, want)
				}
			}

			src := luaComment.ReplaceAllString(luaQuoted.ReplaceAllString(codesLua(s.codes)+s.shared+s.head+s.body, ""), "")
			defined := map[string]int{}
			for _, m := range luaDefined.FindAllStringSubmatch(src, -1) {
				for _, n := range strings.Split(m[1], ", ") {
					defined[n]++
				}
			}
			for n, times := range defined {
				if times > 1 {
					t.Errorf("%s is defined %d times", n, times)
				}
			}
			own := luaComment.ReplaceAllString(luaQuoted.ReplaceAllString(s.head+s.body, ""), "")
			used := map[string]bool{}
			for _, c := range luaConstant.FindAllString(own, -1) {
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
