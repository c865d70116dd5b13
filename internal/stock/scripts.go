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
// the codes of its table (Code), whose Lua constants come first.
type script struct {
	*redis.Script
	src   string
	codes []Code
	// head and body are an assembled script's own text; "" for a file
	head, body string
}

func NewScript(src string, codes []Code) *script {
	return &script{Script: redis.NewScript(src), src: src, codes: codes}
}

// assembled is a script still assembled in Go from the parts, with its head and body
// apart: the waitlist's scripts and the two that offer to it (settle, return).
func assembled(codes []Code, shared, head, body string) *script {
	s := NewScript("\n"+CodesLua(codes)+shared+head+body, codes)
	s.head, s.body = head, body
	return s
}

// Code is a code a script answers with: its Lua constant's name, its value, and
// for a refusal its error (nil: an answer).
type Code struct {
	Lua   string
	Value int64
	Err   error
}

// CodesLua defines codes as Lua constants: a script's section "codes".
func CodesLua(codes []Code) string {
	if len(codes) == 0 {
		return ""
	}
	names, values := make([]string, len(codes)), make([]string, len(codes))
	for i, c := range codes {
		names[i], values[i] = c.Lua, strconv.FormatInt(c.Value, 10)
	}
	return "local " + strings.Join(names, ", ") + " = " + strings.Join(values, ", ") + "\n"
}

// CodeOf returns the entry of codes whose value is n; a value that none has is an
// error.
func CodeOf(codes []Code, n int64) (Code, error) {
	for _, c := range codes {
		if c.Value == n {
			return c, nil
		}
	}
	return Code{}, fmt.Errorf("unexpected script reply %d", n)
}

// AnswerOf is codeOf's entry's error: nil for an answer, the refusal's error, or the
// error of a value that none has.
func AnswerOf(codes []Code, n int64) error {
	c, err := CodeOf(codes, n)
	if err != nil {
		return err
	}
	return c.Err
}
