package stock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
)

// NewToken is 8 random bytes in hex: a name no other process makes (a rebuild's staged
// hash and closing, a move).
func NewToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Script is one of the Lua scripts of stock's packages: a .lua file beside the Go code
// that runs it, embedded as it stands. Its head names its KEYS and ARGV once, its body
// reads only those names, and what it shares with other scripts (the parts in this
// folder, such as units.lua) and what Go writes for it (its codes, the reserve script's
// layout) stand in it between ---- begin and ---- end lines that go generate keeps up
// to date (go test -run TestScriptFiles -args -update; internal/luafile). A script
// answers with the codes of its table (Code), whose Lua constants come first.
type Script struct {
	*redis.Script
	src   string
	codes []Code
}

// NewScript returns the script of text src, which answers with codes.
func NewScript(src string, codes []Code) *Script {
	return &Script{Script: redis.NewScript(src), src: src, codes: codes}
}

// Src is the script's text, as Redis runs it.
func (s *Script) Src() string { return s.src }

// Codes are the codes the script answers with.
func (s *Script) Codes() []Code { return s.codes }

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

// ByBucket groups a sale's orders by the home bucket of their buyers (of).
func ByBucket[T any](sale Bucket, orders []T, of func(T) buyer.ID) map[Bucket][]T {
	out := map[Bucket][]T{}
	for _, o := range orders {
		b := Home(sale.act, of(o), sale.k)
		out[b] = append(out[b], o)
	}
	return out
}

// Reply returns a script's reply as the array it must be, refusing any other shape.
func Reply(v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, fmt.Errorf("unexpected script reply %#v", v)
	}
	return arr, nil
}

func Integers(vs []any) ([]int64, error) {
	n := make([]int64, len(vs))
	for i, v := range vs {
		var err error
		if n[i], err = Integer(v); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func Integer(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("unexpected script value %#v", v)
}

// WhileMoving runs fn until it returns anything but the errors of a slot on its way to
// another master (MOVED, ASK, TRYAGAIN), or ctx ends; between runs it waits 20 ms and
// refreshes a cluster client's slot map. A cluster client follows those itself, but
// within a budget of three redirects, which a live migration exhausts: a script whose
// keys are split between the two masters meets TRYAGAIN until the last key has moved.
// Only for scripts that are safe to run twice.
func WhileMoving(ctx context.Context, rdb redis.UniversalClient, fn func() error) error {
	for {
		err := fn()
		_, moved := redis.IsMovedError(err)
		_, ask := redis.IsAskError(err)
		if !moved && !ask && !redis.IsTryAgainError(err) {
			return err
		}
		if c, ok := rdb.(*redis.ClusterClient); ok {
			c.ReloadState(ctx)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}
