package stock

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// script is one of the package's Lua scripts other than the reserve script (whose
// layout reserve.go defines in Go): the fragments it shares with others, then its head,
// which names its KEYS and ARGV once (locals; in a longer script K.<key> and ARG.<arg>;
// and tables of the parts of variable length), then its body, which reads only those
// names. A fragment reads
// neither KEYS nor ARGV: the script passes it what it needs. The script answers with
// the codes of its table, whose Lua constants come before everything else.
type script struct {
	*redis.Script
	codes              []scriptCode
	shared, head, body string
}

func newScript(codes []scriptCode, shared, head, body string) *script {
	return &script{Script: redis.NewScript(codesLua(codes) + shared + head + body), codes: codes, shared: shared,
		head: head, body: body}
}

// scriptCode is a code a script answers with: its Lua constant's name, its value, and
// for a refusal its error (nil: an answer).
type scriptCode struct {
	lua  string
	code int64
	err  error
}

// codesLua defines codes as Lua constants.
func codesLua(codes []scriptCode) string {
	if len(codes) == 0 {
		return ""
	}
	names, values := make([]string, len(codes)), make([]string, len(codes))
	for i, c := range codes {
		names[i], values[i] = c.lua, strconv.FormatInt(c.code, 10)
	}
	return "\nlocal " + strings.Join(names, ", ") + " = " + strings.Join(values, ", ") + "\n"
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
