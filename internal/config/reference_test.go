package config_test

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"seckill/internal/config"
)

// repoRoot is the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// referenceRow is a row of docs/configuration.md's table of variables:
// | `NAME` | default | read by | what it does |.
var referenceRow = regexp.MustCompile("^\\| `([A-Z0-9_]+)` \\| ([^|]+) \\| ([a-z, ]+) \\| (.+) \\|$")

// firstCode is the first `code` span of a cell.
var firstCode = regexp.MustCompile("`([^`]*)`")

// TestConfigurationReference holds docs/configuration.md to the code: a row per
// variable of config.Vars with its default (and dev-mode default), the binaries that
// read it and, for a secret, its <NAME>_FILE; no row for a variable the code does not
// read; and no variable named in the binaries' code outside the table.
func TestConfigurationReference(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ def, binaries, doc string }
	rows := map[string]row{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "| `") || strings.Contains(line, "(`internal/") || strings.Contains(line, "(`cmd/") {
			continue // the fixed bounds' table names code, not variables
		}
		m := referenceRow.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/configuration.md: a row not in the table's shape: %s", line)
			continue
		}
		rows[m[1]] = row{strings.TrimSpace(m[2]), m[3], m[4]}
	}
	if len(rows) == 0 {
		t.Fatal("docs/configuration.md has no table rows")
	}

	known := map[string]bool{}
	for _, v := range config.Vars {
		known[v.Name] = true
		if v.Secret {
			known[v.Name+"_FILE"] = true
		}
		r, ok := rows[v.Name]
		if !ok {
			t.Errorf("%s is read by the binaries but has no row in docs/configuration.md", v.Name)
			continue
		}
		if v.Default == "" {
			if !strings.HasPrefix(r.def, "unset") {
				t.Errorf("%s: docs/configuration.md says the default is %q; the code has none (write unset)", v.Name, r.def)
			}
		} else if m := firstCode.FindStringSubmatch(r.def); m == nil || m[1] != v.Default {
			t.Errorf("%s: docs/configuration.md says the default is %q; the code's is `%s`", v.Name, r.def, v.Default)
		}
		if v.DevDefault != "" && !strings.Contains(r.def, "dev mode") {
			t.Errorf("%s: the code has a dev-mode default; docs/configuration.md's default %q does not say it", v.Name, r.def)
		}
		if r.binaries != v.Binaries {
			t.Errorf("%s: docs/configuration.md says read by %q; the code says %q", v.Name, r.binaries, v.Binaries)
		}
		if v.Secret && !strings.Contains(r.doc, "`"+v.Name+"_FILE`") {
			t.Errorf("%s is a secret: its row in docs/configuration.md must name %s_FILE", v.Name, v.Name)
		}
	}
	for name := range rows {
		if !known[name] {
			t.Errorf("docs/configuration.md has a row for %s, which config.Vars does not list", name)
		}
	}

	// The binaries' code: a variable named there must be the table's (a Getenv of a
	// name outside config.Vars would be a setting nobody can find).
	for name, where := range codeVariables(t) {
		if !known[name] {
			t.Errorf("%s names %s, which is not in config.Vars (and so not in docs/configuration.md)", where, name)
		}
	}
}

// variableName is what a variable of the binaries looks like in a string literal.
var variableName = regexp.MustCompile(`^(SECKILL_[A-Z0-9_]+|GOGC|GOMEMLIMIT|GODEBUG|GOMAXPROCS)$`)

// codeVariables returns the variable names the binaries' Go code (cmd/, internal/
// without its tests and test helpers) holds as string literals, with a file that does.
func codeVariables(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	root := repoRoot()
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testutil" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var s scanner.Scanner
			fset := token.NewFileSet()
			s.Init(fset.AddFile(path, -1, len(src)), src, nil, 0)
			for {
				_, tok, lit := s.Scan()
				if tok == token.EOF {
					break
				}
				if tok != token.STRING {
					continue
				}
				if v, err := strconv.Unquote(lit); err == nil && variableName.MatchString(v) {
					rel, _ := filepath.Rel(root, path)
					found[v] = rel
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) == 0 {
		t.Fatal("no variable name found in the binaries' code")
	}
	return found
}
