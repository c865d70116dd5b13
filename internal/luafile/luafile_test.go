package luafile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a T that keeps what Check reports.
type recorder struct {
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) {
	r.fatal = true
	r.errors = append(r.errors, fmt.Sprint(args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }
func (r *recorder) Logf(string, ...any)               {}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const script = `-- Takes one unit.
--
-- KEYS[1] stock  ARGV[1] qty

---- begin codes: from Go
local OLD = 1
---- end codes
---- begin each.lua: a copy
old each
---- end each.lua
---- begin sum.lua: a copy
old sum
---- end sum.lua

local stock, qty = KEYS[1], ARGV[1]

return sum(stock, qty) -- the units left
`

func TestParse(t *testing.T) {
	f, err := Parse(script)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range f.Sections {
		names = append(names, s.Name+"="+s.Text)
	}
	if got, want := strings.Join(names, "|"), "codes=local OLD = 1\n|each.lua=old each\n|sum.lua=old sum\n"; got != want {
		t.Errorf("sections %q, want %q", got, want)
	}
	head, body := Code(f.Own)
	if head != "local stock, qty = KEYS[1], ARGV[1]" {
		t.Errorf("head %q", head)
	}
	if strings.Contains(body, "KEYS") || !strings.Contains(body, "return sum(stock, qty)") || strings.Contains(body, "units left") {
		t.Errorf("body %q", body)
	}
	if _, err := Parse("---- begin x.lua\nno end\n"); err == nil {
		t.Error("a section without its end line parsed")
	}
	if f, err := Parse("---- begin x.lua\n---- end x.lua\n"); err != nil || len(f.Sections) != 1 || f.Sections[0].Text != "" {
		t.Errorf("an empty section: %+v, %v", f, err)
	}
}

// Check finds each stale section and a part whose needs come after it; with update it
// rewrites the sections, and then finds nothing.
func TestCheck(t *testing.T) {
	dir, parts := t.TempDir(), t.TempDir()
	path := write(t, dir, "take.lua", script)
	write(t, dir, "take.go", "package take\n\n//go:embed take.lua\nvar take string\n")
	write(t, parts, "each.lua", "-- needs: sum.lua\nlocal function each() end\n")
	write(t, dir, "sum.lua", "local function sum(k, n) return n end\n")
	src := Sources{Parts: []string{parts}, Generated: func(file, name string) (string, bool) {
		if file == "take.lua" && name == "codes" {
			return "local TAKEN = 1\n", true
		}
		return "", false
	}}

	r := &recorder{}
	Check(r, dir, src, false)
	got := strings.Join(r.errors, "\n")
	for _, want := range []string{"section codes is not", "section each.lua is not", "section sum.lua is not",
		"part each.lua needs sum.lua before it"} {
		if !strings.Contains(got, want) {
			t.Errorf("Check reported %q, want %q in it", got, want)
		}
	}

	Check(&recorder{}, dir, src, true)
	b, _ := os.ReadFile(path)
	for _, want := range []string{"---- begin codes: from Go\nlocal TAKEN = 1\n---- end codes\n",
		"---- begin each.lua: a copy\n-- needs: sum.lua\nlocal function each() end\n---- end each.lua\n",
		"\nlocal stock, qty = KEYS[1], ARGV[1]\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, b)
		}
	}
	r = &recorder{}
	Check(r, dir, src, false)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "needs sum.lua before it") {
		t.Errorf("after the rewrite Check reported %q, want only the order of the parts", r.errors)
	}

	r = &recorder{}
	write(t, dir, "unknown.lua", "---- begin nowhere\n---- end nowhere\n")
	Check(r, dir, src, false)
	if !strings.Contains(strings.Join(r.errors, "\n"), "section nowhere: no source for it") {
		t.Errorf("a section of no source: %q", r.errors)
	}
}

// A script (a file the Go code embeds) reads KEYS and ARGV in its head only; a part
// (any other) never.
func TestNames(t *testing.T) {
	for _, c := range []struct {
		name, text string
		embedded   bool
		want       string // in the report; "" for none
	}{
		{"head", "-- KEYS[1] in a comment\nlocal k = KEYS[1]\n\nreturn k\n", true, ""},
		{"body", "local k = KEYS[1]\n\nreturn ARGV[1]\n", true, "the body reads ARGV"},
		{"part", "local function f(k) return k end\n-- a comment may say KEYS\n", false, ""},
		{"part reads", "local function f() return KEYS[1] end\n", false, "a part reads KEYS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "s.lua", c.text)
			if c.embedded {
				write(t, dir, "s.go", "package s\n\n//go:embed s.lua\nvar s string\n")
			}
			r := &recorder{}
			Check(r, dir, Sources{}, false)
			got := strings.Join(r.errors, "\n")
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("Check reported %q, want %q", got, c.want)
			}
		})
	}
}
