package stock

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A script of this package is a .lua file beside the Go code that runs it, embedded as
// it stands: its head names its KEYS and ARGV once, its body reads only those names,
// and what it shares with other scripts (the parts, such as units.lua) and what Go
// writes for it (its codes, the reserve script's layout) stand in it between
// ---- begin and ---- end lines that go generate keeps up to date
// (go test -run TestScriptFiles -args -update; internal/luafile). A script answers with
// the codes of its table (scriptCode), whose Lua constants come first.
type script struct {
	*redis.Script
	src   string
	codes []scriptCode
	// head and body are an assembled script's own text; "" for a file
	head, body string
}

func newScript(src string, codes []scriptCode) *script {
	return &script{Script: redis.NewScript(src), src: src, codes: codes}
}

// assembled is a script still assembled in Go from the parts, with its head and body
// apart: the waitlist's scripts and the two that offer to it (settle, return).
func assembled(codes []scriptCode, shared, head, body string) *script {
	s := newScript("\n"+codesLua(codes)+shared+head+body, codes)
	s.head, s.body = head, body
	return s
}

// scriptCode is a code a script answers with: its Lua constant's name, its value, and
// for a refusal its error (nil: an answer).
type scriptCode struct {
	lua  string
	code int64
	err  error
}

// codesLua defines codes as Lua constants: a script's section "codes".
func codesLua(codes []scriptCode) string {
	if len(codes) == 0 {
		return ""
	}
	names, values := make([]string, len(codes)), make([]string, len(codes))
	for i, c := range codes {
		names[i], values[i] = c.lua, strconv.FormatInt(c.code, 10)
	}
	return "local " + strings.Join(names, ", ") + " = " + strings.Join(values, ", ") + "\n"
}

// codeOf returns the entry of codes whose value is n; a value that none has is an
// error.
func codeOf(codes []scriptCode, n int64) (scriptCode, error) {
	for _, c := range codes {
		if c.code == n {
			return c, nil
		}
	}
	return scriptCode{}, fmt.Errorf("unexpected script reply %d", n)
}

// answerOf is codeOf's entry's error: nil for an answer, the refusal's error, or the
// error of a value that none has.
func answerOf(codes []scriptCode, n int64) error {
	c, err := codeOf(codes, n)
	if err != nil {
		return err
	}
	return c.err
}
