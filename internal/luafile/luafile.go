// Package luafile keeps the Lua script files of this module whole and in step with
// their sources. A script is one .lua file beside the Go code that runs it, embedded
// with //go:embed: what Redis runs is the file as it stands, so a reader who opens it
// sees the whole script. The parts of a file that come from elsewhere are sections
// between two marker lines:
//
//	---- begin NAME: a note for the reader
//	...
//	---- end NAME
//
// A NAME that ends in ".lua" is a copy of a shared part, a file of its own (in a folder
// of parts, or beside the script); any other NAME is written from Go, where its source
// is (a table of reply codes, the layout of a call). A part may name the parts it
// calls in a line "-- needs: a.lua, b.lua": a script that copies it copies those
// before it.
//
// Check, run by each package's TestScriptFiles, compares every section with its
// source; with update (go generate, which runs that test with -update) it rewrites the
// sections instead. Nothing here runs outside the tests.
package luafile

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Section is a part of a file between its marker lines.
type Section struct {
	Name string
	// Text is what stands between the markers, each line with its end.
	Text string
	// start and end are the byte offsets of Text in the file.
	start, end int
}

// File is a script file read into its sections (at its top level: a section copied
// inside another is the other's text) and its own text, the rest.
type File struct {
	Sections []Section
	// Own is the file without its sections and their markers.
	Own string
}

var (
	position  = regexp.MustCompile(`\b(KEYS|ARGV)\b`)
	embedLine = regexp.MustCompile(`(?m)^//go:embed ([^\n]+)$`)
	beginLine = regexp.MustCompile(`(?m)^---- begin ([^\s:]+)(:[^\n]*)?\n`)
	needsLine = regexp.MustCompile(`(?m)^-- needs: ([^\n]+)$`)
)

// Parse reads src into its sections and its own text. A section begun and not ended is
// an error.
func Parse(src string) (File, error) {
	var f File
	var own strings.Builder
	at := 0
	for {
		m := beginLine.FindStringSubmatchIndex(src[at:])
		if m == nil {
			break
		}
		name := src[at+m[2] : at+m[3]]
		start := at + m[1]
		endMark := "---- end " + name + "\n"
		end := -1
		if strings.HasPrefix(src[start:], endMark) {
			end = start
		} else if i := strings.Index(src[start:], "\n"+endMark); i >= 0 {
			end = start + i + 1
		}
		if end < 0 {
			return File{}, fmt.Errorf("section %s has no line %q", name, strings.TrimSpace(endMark))
		}
		own.WriteString(src[at : at+m[0]])
		f.Sections = append(f.Sections, Section{Name: name, Text: src[start:end], start: start, end: end})
		at = end + len(endMark)
	}
	own.WriteString(src[at:])
	f.Own = own.String()
	return f, nil
}

// Sources say where each section of a folder's script files comes from.
type Sources struct {
	// Parts are the folders that hold shared parts, searched in order after the
	// script's own folder.
	Parts []string
	// Generated returns the text of section name of file (its base name) written from
	// Go, and false for a name it does not know.
	Generated func(file, name string) (string, bool)
}

// part returns the text of part name, from dir or one of the parts' folders.
func (s Sources) part(dir, name string) (string, error) {
	for _, d := range append([]string{dir}, s.Parts...) {
		b, err := os.ReadFile(filepath.Join(d, name))
		if err == nil {
			return string(b), nil
		}
		if !os.IsNotExist(err) {
			return "", err
		}
	}
	return "", fmt.Errorf("no part %s in %s or %v", name, dir, s.Parts)
}

// Needs returns the parts that part text says it calls (its "-- needs:" lines).
func Needs(text string) []string {
	var out []string
	for _, m := range needsLine.FindAllStringSubmatch(text, -1) {
		for _, n := range strings.Split(m[1], ",") {
			out = append(out, strings.TrimSpace(n))
		}
	}
	return out
}

// T is what Check reports to: a *testing.T.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

var _ T = (*testing.T)(nil)

// Check holds each .lua file of dir to its sources: each section's text is its part's
// or what Go generates, and each part's needs stand before it. With update it writes
// the sections that differ instead of failing. It also holds each file to the rule of
// names: a script (a file the package's Go code embeds) reads KEYS and ARGV in its head
// or its generated sections only, never in its body; a part (any other file) never.
func Check(t T, dir string, src Sources, update bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no .lua file in %s", dir)
	}
	embedded, err := Embedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A part may hold a section of its own (a generated one): rewriting goes on until
	// nothing changes, so that the scripts get the part as it is after its rewrite.
	for pass := 0; pass < 5; pass++ {
		if !checkFiles(t, dir, files, embedded, src, update) || !update {
			return
		}
	}
	t.Errorf("%s: the sections keep changing", dir)
}

// checkFiles is one pass of Check, which reports whether it rewrote a file.
func checkFiles(t T, dir string, files []string, embedded map[string]bool, src Sources, update bool) (rewrote bool) {
	t.Helper()
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		f, err := Parse(text)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		name := filepath.Base(path)
		head, body := Code(f.Own)
		switch {
		case !embedded[name] && position.MatchString(head+body):
			t.Errorf("%s: a part reads %s: its caller passes it what it needs", path, position.FindString(head+body))
		case embedded[name] && position.MatchString(body):
			t.Errorf("%s: the body reads %s: name it in the head", path, position.FindString(body))
		}
		var out strings.Builder
		at, stale := 0, false
		for i, s := range f.Sections {
			want, err := src.want(dir, name, s.Name)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			for _, n := range Needs(want) {
				if !slices.ContainsFunc(f.Sections[:i], func(s Section) bool { return s.Name == n }) {
					t.Errorf("%s: part %s needs %s before it", path, s.Name, n)
				}
			}
			if s.Text == want {
				continue
			}
			stale = true
			out.WriteString(text[at:s.start])
			out.WriteString(want)
			at = s.end
			if !update {
				t.Errorf("%s: section %s is not what its source says: run go generate (go test -run TestScriptFiles -update)", path, s.Name)
			}
		}
		if stale && update {
			out.WriteString(text[at:])
			if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: sections rewritten", path)
			rewrote = true
		}
	}
	return rewrote
}

// Embedded returns the names of the files that the Go code of dir (not its tests)
// embeds: its scripts.
func Embedded(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range embedLine.FindAllStringSubmatch(string(b), -1) {
			for _, name := range strings.Fields(m[1]) {
				out[name] = true
			}
		}
	}
	return out, nil
}

// want is the text section name of file should hold.
func (s Sources) want(dir, file, name string) (string, error) {
	if strings.HasSuffix(name, ".lua") {
		return s.part(dir, name)
	}
	if s.Generated != nil {
		if text, ok := s.Generated(file, name); ok {
			return text, nil
		}
	}
	return "", fmt.Errorf("section %s: no source for it", name)
}

// Code splits a script's own text (File.Own) into its head, the first paragraph of
// code (the lines up to the first blank line), which names the script's KEYS and ARGV,
// and its body, the rest; comments and the blank lines before the head are left out of
// both.
func Code(own string) (head, body string) {
	lines := strings.Split(uncommented(own), "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	j := i
	for j < len(lines) && strings.TrimSpace(lines[j]) != "" {
		j++
	}
	return strings.Join(lines[i:j], "\n"), strings.Join(lines[j:], "\n")
}

var (
	quoted  = regexp.MustCompile(`'[^'\n]*'|"[^"\n]*"`)
	comment = regexp.MustCompile(`--[^\n]*`)
)

// uncommented is src without its comments: a line that was only a comment goes whole,
// so that a paragraph of code stays one.
func uncommented(src string) string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") {
			continue
		}
		out = append(out, comment.ReplaceAllString(l, ""))
	}
	return strings.Join(out, "\n")
}

// Stripped is src without its quoted strings and comments, for the checks that read
// names.
func Stripped(src string) string {
	return comment.ReplaceAllString(quoted.ReplaceAllString(src, "''"), "")
}
