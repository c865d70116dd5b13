package waitingroom

import (
	"context"
	"errors"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"seckill/internal/luafile"
	"seckill/internal/stock"
	"seckill/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the .lua files (go generate)")

// scripts are the line's scripts by file.
var scripts = map[string]*lineScript{"challenge.lua": challengeScript, "join.lua": joinScript, "read.lua": readScript,
	"admit.lua": admitScript, "status.lua": statusScript}

// Each .lua file holds its parts (the line's, and internal/stock's for the sale's state)
// and what Go writes for it (the codes; the head, from the script's keys and arguments)
// as their sources have them, and reads KEYS and ARGV in its head only
// (internal/luafile).
func TestScriptFiles(t *testing.T) {
	luafile.Check(t, ".", luafile.Sources{Parts: []string{"../stock"}, Generated: func(file, name string) (string, bool) {
		s := scripts[file]
		switch {
		case s != nil && name == "codes":
			return repliesLua(), true
		case s != nil && name == "head":
			return headLua(s.keys, s.args), true
		}
		return "", false
	}}, *update)
}

// Go and Lua agree on the line's reply codes, ticket statuses and states: each has one code and
// one Lua name, a real Redis reads the Lua constants as Go's table has them, every name
// a script uses is one of them and each of them is used, and decode answers each code
// with its values or its refusal's error, and anything else with an unexpected reply.
func TestReplyCodes(t *testing.T) {
	codes, names := map[int64]bool{}, map[string]bool{}
	var want []int64 // every constant's value, in repliesLua's order
	for _, r := range lineReplies {
		if codes[r.code] || names[r.lua] {
			t.Errorf("reply %d %s: code or name used twice", r.code, r.lua)
		}
		codes[r.code], names[r.lua] = true, true
		want = append(want, r.code)
	}
	for i, s := range ticketStatuses {
		if names[s.lua] {
			t.Errorf("status %s: name used twice", s.lua)
		}
		names[s.lua] = true
		want = append(want, int64(i))
	}
	for i, s := range lineStates {
		if names[s.lua] {
			t.Errorf("state %s: name used twice", s.lua)
		}
		names[s.lua] = true
		want = append(want, int64(i))
	}

	rdb := testutil.StartRedis(t).Client(t)
	all := make([]string, 0, len(names))
	for _, r := range lineReplies {
		all = append(all, r.lua)
	}
	for _, s := range ticketStatuses {
		all = append(all, s.lua)
	}
	for _, s := range lineStates {
		all = append(all, s.lua)
	}
	got, err := rdb.Eval(context.Background(), repliesLua()+"return {"+strings.Join(all, ", ")+"}", nil).Int64Slice()
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Lua reads the constants as %v (%v), want %v", got, err, want)
	}

	constant := regexp.MustCompile(`\b[A-Z][A-Z_]+\b`)
	used := map[string]bool{}
	for name, s := range scripts {
		// the script's own text and the line's ticket part: the sale's state is stock's
		// part, with stock's own constants
		f, err := luafile.Parse(s.src)
		if err != nil {
			t.Fatal(err)
		}
		ticket, err := os.ReadFile("ticket.lua")
		if err != nil {
			t.Fatal(err)
		}
		body := luafile.Stripped(f.Own + string(ticket))
		for _, c := range constant.FindAllString(body, -1) {
			if c == "K" || c == "ARG" {
				continue
			}
			used[c] = true
			if !names[c] {
				t.Errorf("the %s script uses %s, which is not a constant of the table", name, c)
			}
		}
	}
	for n := range names {
		if !used[n] {
			t.Errorf("%s is used by no script", n)
		}
	}

	for _, r := range lineReplies {
		res := []int64{r.code}
		for i := range r.values {
			res = append(res, int64(i))
		}
		code, values, err := decode(res, r.code)
		switch {
		case r.err != nil && !errors.Is(err, r.err):
			t.Errorf("%s %v: %v, want %v", r.lua, res, err, r.err)
		case r.err == nil && (err != nil || code != r.code || !slices.Equal(values, res[1:])):
			t.Errorf("%s %v: %d %v %v, want its values", r.lua, res, code, values, err)
		}
		if _, _, err := decode(append(res, 9), r.code); !errors.Is(err, errUnexpectedReply) {
			t.Errorf("%s with a value too many: %v, want an unexpected reply", r.lua, err)
		}
	}
	for _, res := range [][]int64{nil, {-99}, {replyTicket, 1, 2, 3, 4, 5, 6, 7, 8, 9}} {
		if _, _, err := decode(res, replyAdvanced); !errors.Is(err, errUnexpectedReply) {
			t.Errorf("%v, wanting ADVANCED: %v, want an unexpected reply", res, err)
		}
	}
}

// A script runs with every key and argument it names, by name; a missing key, a missing
// argument or one it does not take is an error before Redis is asked.
func TestScriptsTakeTheirNames(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	k := keys(1)
	for name, s := range scripts {
		for _, n := range s.keys {
			if _, ok := k[n]; !ok && n != "pow" {
				t.Errorf("the %s script takes key %q, which keys() lacks", name, n)
			}
		}
	}
	if _, err := readScript.run(ctx, rdb, map[string]string{"sale": stock.SaleKey(stock.One(1))}, map[string]any{"clock": "", "user": 1}); err == nil {
		t.Error("the read script ran without its keys")
	}
	if _, err := readScript.run(ctx, rdb, k, map[string]any{"clock": ""}); err == nil {
		t.Error("the read script ran without its user")
	}
	if _, err := readScript.run(ctx, rdb, k, map[string]any{"clock": "", "usr": 1}); err == nil {
		t.Error("the read script ran with a misspelt argument")
	}
	res, err := readScript.run(ctx, rdb, k, map[string]any{"clock": "", "user": 1})
	if _, _, derr := decode(res, replyTicket); err != nil || !errors.Is(derr, ErrNoSale) {
		t.Errorf("read of a sale Redis does not have: %v %v, want ErrNoSale", res, err)
	}
}
