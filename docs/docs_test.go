package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"seckill/internal/config"
	"seckill/internal/handler"
	"seckill/internal/handler/handlertest"
	"seckill/internal/testutil"
)

// TestDocs checks every Markdown file of the repository (README.md, docs/, loadtest/, and
// any page added later): a relative link or anchor that does not resolve, an environment
// variable the code does not read, a route the router does not serve, or a test,
// benchmark or fuzz target the code does not have is an error. So is a fact kept in two
// places: a measured figure (µs, or a rate per second) on two pages, a table of settings
// outside docs/configuration.md, a default in brackets (`SECKILL_X` [5s]) that is not the
// code's, or a test named in a page written for operators. And a page over 10 KB lists
// its sections: every ## heading is linked from the page itself.
func TestDocs(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pages := markdownFiles(t, root)
	if !slices.Contains(pages, "README.md") || !slices.Contains(pages, "docs/concepts.md") {
		t.Fatalf("the Markdown files found under %s lack README.md or docs/concepts.md: %v", root, pages)
	}
	c := checker{root: root, vars: codeVariables(t, root), routes: routerRoutes(t), tests: testNames(t, root),
		settings: settingDefaults()}
	for _, p := range c.check(t, pages) {
		t.Error(p)
	}
}

// TestInternalsLayout holds the layout block of docs/internals/README.md (the first
// fenced block after its "## Layout" heading: a path, or paths split by ", ", then what it
// is) to the folders: every path it names exists and is named once, and it names every Go
// package under cmd/, internal/ and lock/ and every other folder at the top of the
// repository.
func TestInternalsLayout(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs/internals/README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal(`docs/internals/README.md has no "## Layout" section`)
	}
	_, block, ok := strings.Cut(after, "```\n")
	if block, _, ok = strings.Cut(block, "```"); !ok {
		t.Fatal("the layout section has no fenced block")
	}
	listed := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		paths, _, _ := strings.Cut(line, "  ") // the description follows two spaces or more
		for _, p := range strings.Split(strings.TrimSpace(paths), ", ") {
			p = strings.TrimSuffix(p, "/")
			listed[p]++
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("the layout names %s, which does not exist", p)
			}
		}
	}
	for p, n := range listed {
		if n > 1 {
			t.Errorf("the layout names %s %d times", p, n)
		}
	}
	want := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case !d.IsDir():
			dir := filepath.ToSlash(filepath.Dir(rel))
			if strings.HasSuffix(rel, ".go") && (strings.HasPrefix(dir, "internal/") || strings.HasPrefix(dir, "cmd/") ||
				dir == "lock") && !strings.Contains(dir, "/testdata") {
				want[dir] = true
			}
		case rel == ".":
		case strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "artifacts" || d.Name() == "node_modules":
			return filepath.SkipDir
		case !strings.Contains(rel, "/") && rel != "internal" && rel != "cmd":
			want[rel] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		if listed[p] == 0 {
			t.Errorf("the layout of docs/internals/README.md does not name %s", p)
		}
	}
}

// TestRoomSizes holds the rooms to the size docs/internals/README.md promises: no Go
// package under cmd/, internal/ (but internal/testutil) and lock/ over maxPackageLines
// lines outside its tests, and no type, in any of them, with over maxMethods methods.
func TestRoomSizes(t *testing.T) {
	const maxPackageLines, maxMethods = 3100, 25
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}   // package folder -> lines outside tests
	methods := map[string]int{} // package folder + "." + type -> methods
	fset := token.NewFileSet()
	for _, top := range []string{"cmd", "internal", "lock"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			dir := filepath.ToSlash(filepath.Dir(rel))
			if dir == "internal/testutil" || strings.Contains(dir, "/testdata") {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines[dir] += strings.Count(string(src), "\n")
			f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil {
					methods[dir+"."+receiverType(fn.Recv.List[0].Type)]++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(methods) < 50 || lines["internal/sale"] == 0 {
		t.Fatalf("found methods of %d types and %d lines in internal/sale: the walk missed the code", len(methods), lines["internal/sale"])
	}
	for dir, n := range lines {
		if n > maxPackageLines {
			t.Errorf("%s has %d lines outside its tests, over %d: split it by what it does", dir, n, maxPackageLines)
		}
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s has %d methods, over %d: split it by what its methods do", typ, n, maxMethods)
		}
	}
}

// receiverType is the name of a method's receiver type: T of T, *T, T[K] or *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}

// TestJSONExamples checks every JSON example of the Markdown files (a ```json block,
// such as the events of docs/integration.md): it is JSON, and its times are in the one
// format the service writes, so an example keeps showing what the service sends.
func TestJSONExamples(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, page := range markdownFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for i, block := range strings.Split(string(b), "```json\n")[1:] {
			body, _, closed := strings.Cut(block, "```")
			if !closed {
				t.Errorf("%s: JSON example %d is not closed", page, i+1)
				continue
			}
			examples++
			testutil.CheckTimes(t, fmt.Sprintf("%s: JSON example %d", page, i+1), []byte(body))
		}
	}
	if examples == 0 {
		t.Error("no JSON example found: docs/integration.md shows an event")
	}
}

// TestCheckerFindsEachKind runs the checker on pages made to break each rule, so a
// checker that stopped finding a kind of problem fails here.
func TestCheckerFindsEachKind(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n## Group-buy (拼团) `sales`\n\n"+
		"[ok](docs/a.md#the-part) [ok](#group-buy-拼团-sales) [ok](docs/) ![ok](docs/a.md)\n"+
		"[gone](docs/missing.md) [bad anchor](docs/a.md#nowhere) [bad](#nope)\n"+
		"[outside](../elsewhere.md) [web](https://example.com/x.md#y)\n"+
		"`SECKILL_KNOWN` `SECKILL_KNOWN_FILE` SECKILL_TYPO `LOADTEST_GONE` `AUDIT_FLAGS` `SECKILL_PLAIN_FILE`\n"+
		"`GET /api/v1/activities/{id}` `POST /api/v1/activities/42/orders` `GET /orders/{id}` "+
		"/api/v1/admin and `GET /healthz` and `/api/v1/admin/...`\n"+
		"`POST /api/v1/activities/{id}` `GET /api/v1/nothing` `DELETE /orders/{id}/pay`\n"+
		"shown by `TestKnown` and BenchmarkKnown, not by TestGone or `go test -run FuzzGone`\n"+
		"```sh\n[in code](nowhere.md)\ncurl http://127.0.0.1:8080/api/v1/activities/$ID/orderz\n```\n"+
		"The API spends 54–81 µs per purchase, `SECKILL_KNOWN` [7] and `SECKILL_PLAIN` [5s].\n\n"+
		"| Variable | Default |\n|---|---|\n| `SECKILL_KNOWN` | 5s |\n")
	write("docs/a.md", "# A\n\n## The part\n\n<a id=\"kept\"></a>\n[ok](../README.md#top) [ok](#kept)\n")
	write("docs/b.md", "# B\n\nMeasured: 54-81 µs of CPU, 9,000 purchases/s.\n\n```sh\n12 µs in a code block\n```\n")
	write("docs/configuration.md", "# Settings\n\n| Variable | Default |\n|---|---|\n| `SECKILL_KNOWN` | 5s |\n\n9,000 purchases/s in one place.\n")
	write("docs/runbook.md", "# Runbook\n\nShown by `TestKnown`.\n\n```sh\ngo test -run TestKnown ./e2e/\n```\n")
	big := strings.Repeat("A long page. ", tocSize/13+10)
	write("docs/big.md", "# Big\n\n- [One](#one)\n\n## One\n\n"+big+"\n\n## Two\n\n12 µs\n")
	write("docs/small.md", "# Small\n\n## Unlisted\n\n12 µs again\n")
	c := checker{
		root:     root,
		settings: map[string]string{"SECKILL_KNOWN": "5s", "SECKILL_PLAIN": "5s"},
		vars:     map[string]bool{"SECKILL_KNOWN": true, "SECKILL_KNOWN_FILE": true, "SECKILL_PLAIN": true, "AUDIT_FLAGS": true},
		routes: []route{{"GET", "/api/v1/activities/:id"}, {"POST", "/api/v1/activities/:id/orders"},
			{"GET", "/api/v1/orders/:id"}, {"POST", "/api/v1/orders/:id/pay"},
			{"GET", "/api/v1/admin/activities"}, {"GET", "/healthz"}},
		tests: map[string]bool{"TestKnown": true, "BenchmarkKnown": true},
	}
	got := strings.Join(c.check(t, []string{"README.md", "docs/a.md", "docs/b.md", "docs/configuration.md",
		"docs/runbook.md", "docs/big.md", "docs/small.md"}), "\n")
	for _, want := range []string{
		"README.md: link docs/missing.md: no such file",
		"README.md: link docs/a.md#nowhere: no heading",
		"README.md: link #nope: no heading",
		"README.md: link ../elsewhere.md: outside the repository",
		"README.md: environment variable SECKILL_TYPO",
		"README.md: environment variable LOADTEST_GONE",
		"README.md: environment variable SECKILL_PLAIN_FILE",
		"README.md: route POST /api/v1/activities/{id}",
		"README.md: route GET /api/v1/nothing",
		"README.md: route DELETE /orders/{id}/pay",
		"README.md: route /api/v1/activities/$ID/orderz",
		"README.md: test TestGone",
		"README.md: test FuzzGone",
		"docs/b.md: figure 54–81µs is on README.md too",
		"docs/configuration.md: figure 9,000purchases/s is on docs/b.md too",
		"docs/small.md: figure 12µs is on docs/big.md too",
		"README.md: setting SECKILL_KNOWN in a table of settings",
		"README.md: setting SECKILL_KNOWN [7]: its default is \"5s\"",
		"docs/runbook.md: test TestKnown named in a page for operators",
		"docs/big.md: section #two: a page over",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the checker did not report %q; it reported:\n%s", want, got)
		}
	}
	for _, fine := range []string{"docs/a.md:", "variable SECKILL_KNOWN:", "variable SECKILL_KNOWN_FILE:", "variable AUDIT_FLAGS:", "nowhere.md", "example.com",
		"route /api/v1/admin:", "GET /healthz", "{id}/orders", "GET /orders/{id}", "the-part", "group-buy", "/api/v1/admin/...",
		"TestKnown:", "BenchmarkKnown", "SECKILL_PLAIN [5s]", "docs/configuration.md: setting", "#one", "docs/small.md: section",
		"figure 12µs is on docs/b.md", "README.md: test TestKnown"} {
		if strings.Contains(got, fine) {
			t.Errorf("the checker reported something fine (%q):\n%s", fine, got)
		}
	}
}

type route struct{ method, path string }

type checker struct {
	root     string
	vars     map[string]bool   // environment variables the code names
	routes   []route           // the router's, with gin's :param segments
	tests    map[string]bool   // the test, benchmark and fuzz functions of the code
	settings map[string]string // the binaries' settings (config.Vars) and their defaults
}

// settingDefaults are the binaries' settings with their defaults, "" for none.
func settingDefaults() map[string]string {
	out := map[string]string{}
	for _, v := range config.Vars {
		out[v.Name] = v.Default
	}
	return out
}

// operatorPages are the pages written for the people who run the service: the tests that
// show what they say are named in docs/testing.md, not in them.
var operatorPages = map[string]bool{
	"docs/configuration.md": true, "docs/connecting.md": true, "docs/deploying.md": true,
	"docs/getting-started.md": true, "docs/integration.md": true, "docs/kubernetes.md": true,
	"docs/runbook.md": true, "docs/sizing.md": true, "docs/topologies.md": true,
}

// settingsPage is the one table of settings.
const settingsPage = "docs/configuration.md"

// tocSize is the size from which a page lists its sections.
const tocSize = 10 * 1024

// check returns one line per problem in pages (paths relative to root).
func (c checker) check(t *testing.T, pages []string) []string {
	t.Helper()
	anchors := map[string]map[string]bool{}
	texts := map[string]string{}
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(c.root, p))
		if err != nil {
			t.Fatal(err)
		}
		texts[p] = string(b)
		anchors[p] = headingAnchors(string(b))
	}
	var problems []string
	for _, p := range pages {
		report := func(format string, args ...any) {
			problems = append(problems, p+": "+fmt.Sprintf(format, args...))
		}
		prose := withoutCode(texts[p])
		for _, target := range links(prose) {
			c.checkLink(p, target, anchors, report)
		}
		for _, v := range envVar.FindAllString(texts[p], -1) {
			if !c.vars[v] {
				report("environment variable %s: the code does not read it", v)
			}
		}
		for _, m := range methodRoute.FindAllStringSubmatch(texts[p], -1) {
			path := trimPath(m[2])
			if strings.HasPrefix(path, "/api/") || apiShorthand.MatchString(path) || rootRoute.MatchString(path) {
				if !c.served(m[1], path, false) {
					report("route %s %s: the router does not serve it", m[1], path)
				}
			}
		}
		for _, m := range bareRoute.FindAllString(texts[p], -1) {
			if path := trimPath(m); !c.served("", path, true) {
				report("route %s: the router serves no such path", path)
			}
		}
		for _, n := range testName.FindAllString(texts[p], -1) {
			if !c.tests[n] {
				report("test %s: no such test, benchmark or fuzz target in the code", n)
			}
		}
		text := withoutFences(texts[p])
		if operatorPages[p] {
			for _, n := range testName.FindAllString(text, -1) {
				report("test %s named in a page for operators: name it in docs/testing.md#the-tests-behind-the-operator-pages", n)
			}
		}
		for _, m := range settingRow.FindAllStringSubmatch(text, -1) {
			if _, ok := c.settings[m[1]]; ok && p != settingsPage {
				report("setting %s in a table of settings: %s is the one table", m[1], settingsPage)
			}
		}
		for _, m := range bracketDefault.FindAllStringSubmatch(text, -1) {
			if def, ok := c.settings[m[1]]; ok && def != m[2] {
				report("setting %s [%s]: its default is %q", m[1], m[2], def)
			}
		}
		if len(texts[p]) > tocSize {
			listed := map[string]bool{}
			for _, target := range links(withoutCode(texts[p])) {
				if strings.HasPrefix(target, "#") {
					listed[target[1:]] = true
				}
			}
			for _, a := range sectionAnchors(texts[p]) {
				if !listed[a] {
					report("section #%s: a page over %d KB lists its sections, and this one is not linked from the page", a, tocSize/1024)
				}
			}
		}
	}
	problems = append(problems, c.figuresOnTwoPages(pages, texts)...)
	sort.Strings(problems)
	return slices.Compact(problems)
}

// figuresOnTwoPages reports a measured figure (a number or a range with µs, or a rate
// per second) that appears on more than one page: each figure lives in one page
// (docs/performance.md measures, docs/sizing.md plans with them) and the others link.
func (c checker) figuresOnTwoPages(pages []string, texts map[string]string) []string {
	seen := map[string][]string{} // figure -> pages, in order
	for _, p := range pages {
		for _, m := range figure.FindAllString(withoutFences(texts[p]), -1) {
			f := strings.Join(strings.Fields(strings.NewReplacer("-", "–", " ", "").Replace(m)), "")
			if !slices.Contains(seen[f], p) {
				seen[f] = append(seen[f], p)
			}
		}
	}
	var out []string
	for f, on := range seen {
		for _, p := range on[1:] {
			out = append(out, fmt.Sprintf("%s: figure %s is on %s too: keep it in one page and link to it", p, f, on[0]))
		}
	}
	return out
}

func (c checker) checkLink(page, target string, anchors map[string]map[string]bool, report func(string, ...any)) {
	if scheme.MatchString(target) {
		return
	}
	file, anchor, _ := strings.Cut(target, "#")
	dest := page
	if file != "" {
		dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
		if dest == ".." || strings.HasPrefix(dest, "../") {
			report("link %s: outside the repository, which a clone does not have", target)
			return
		}
		if _, err := os.Stat(filepath.Join(c.root, dest)); err != nil {
			report("link %s: no such file", target)
			return
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return
	}
	known, ok := anchors[dest]
	if !ok {
		b, err := os.ReadFile(filepath.Join(c.root, dest))
		if err != nil {
			report("link %s: %v", target, err)
			return
		}
		known = headingAnchors(string(b))
		anchors[dest] = known
	}
	if !known[anchor] {
		report("link %s: no heading or anchor %q in %s", target, anchor, dest)
	}
}

var (
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// An environment variable of the service, its scripts or the load tools.
	envVar = regexp.MustCompile(`\b(?:SECKILL|LOADTEST)_[A-Z0-9_]*[A-Z0-9]\b|\b[A-Z0-9]+_FLAGS\b`)
	// A route with its method; paths are checked when they are the API's (/api/..., or
	// the shorthand without /api/v1) or the root's operations and pages.
	methodRoute  = regexp.MustCompile("\\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (/[^\\s`'\")\\]]*)")
	apiShorthand = regexp.MustCompile(`^/(activities|orders|groups|admin)(/|$)`)
	rootRoute    = regexp.MustCompile(`^/(healthz|readyz|metrics|docs)$`)
	// An API path anywhere, in prose or in a curl line.
	bareRoute = regexp.MustCompile("/api/v1(/[^\\s`'\")\\]<>]*)?")
	// A test named as the evidence of what a page says.
	testName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)
	// A table row that begins with a setting: a table of settings.
	settingRow = regexp.MustCompile("(?m)^ {0,3}\\|\\s*`([A-Z][A-Z0-9_]+)`\\s*\\|")
	// A setting with its default in brackets: `SECKILL_RATE_USER` [20].
	bracketDefault = regexp.MustCompile("`([A-Z][A-Z0-9_]+)`\\s+\\[([^\\]\\s]+)\\]")
	// A measured figure: a number or a range of them in µs, or a rate per second.
	figure = regexp.MustCompile(`\b\d[\d,.]*k?(?:\s?[–-]\s?\d[\d,.]*k?)?\s?(?:µs\b|/s\b|(?:purchases|orders|events|answers|requests|acquisitions)(?:/s\b| a second\b| per second\b))`)
)

// trimPath drops a query, a fragment and the punctuation a sentence puts after a path.
func trimPath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	p = strings.TrimRight(p, ".,;:*")
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// served reports whether the router serves path with method ("" any). A segment of the
// document that names a value ({id}, <id>, $ID, 42, ...) matches a parameter of the
// route. With prefix, a path that begins a served route (/api/v1/admin) is served too.
func (c checker) served(method, path string, prefix bool) bool {
	try := []string{path}
	if !strings.HasPrefix(path, "/api/") && apiShorthand.MatchString(path) {
		try = []string{"/api/v1" + path}
	}
	for _, p := range try {
		doc := strings.Split(strings.TrimPrefix(p, "/"), "/")
		for _, r := range c.routes {
			if method != "" && r.method != method {
				continue
			}
			got := strings.Split(strings.TrimPrefix(r.path, "/"), "/")
			if len(doc) > len(got) || len(doc) < len(got) && !prefix && !strings.HasPrefix(got[len(got)-1], "*") {
				continue
			}
			match := true
			for i, s := range doc {
				g := got[i]
				if strings.HasPrefix(g, "*") {
					break
				}
				if s == "..." || s == "…" {
					continue
				}
				if s != g && !strings.HasPrefix(g, ":") {
					match = false
					break
				}
				if strings.HasPrefix(g, ":") && s == "" {
					match = false
					break
				}
			}
			if match {
				return true
			}
		}
	}
	return false
}

// markdownFiles lists the repository's Markdown files, relative to root, leaving out
// what is not the project's (vendored packages, git-ignored run data).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" ||
				name == "artifacts" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// codeVariables collects the environment variable names the code reads: the binaries'
// table (config.Vars, with <NAME>_FILE for a secret), and elsewhere the names the code
// mentions: in Go, the string literals outside internal/config (the load tools' and the
// tests' os.Getenv), and the scripts, Makefile, compose file, nginx template, chart and
// load tools, where a name is read as it is written.
func codeVariables(t *testing.T, root string) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	for _, v := range config.Vars {
		vars[v.Name] = true
		if v.Secret {
			vars[v.Name+"_FILE"] = true
		}
	}
	name := regexp.MustCompile(`[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(base, ".") || base == "node_modules" || base == "artifacts" || base == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasPrefix(rel, "internal/config/"):
			// the binaries' variables are the table's, above
		case strings.HasSuffix(base, ".go"):
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, lit := range goStrings(src) {
				for _, n := range name.FindAllString(lit, -1) {
					vars[n] = true
				}
			}
		case strings.HasSuffix(base, ".md"), rel == "api/openapi.yaml":
			// documents, not code
		case strings.HasSuffix(base, ".sh"), base == "Makefile", base == "Dockerfile",
			strings.HasSuffix(base, ".yml"), strings.HasSuffix(base, ".yaml"), strings.HasSuffix(base, ".tpl"),
			strings.HasSuffix(base, ".template"), strings.HasSuffix(base, ".conf"),
			strings.HasSuffix(base, ".js") && strings.HasPrefix(rel, "loadtest/"):
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, n := range name.FindAllString(string(src), -1) {
				vars[n] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !vars["SECKILL_REDIS_ADDR"] || !vars["LOADTEST_LIMITS"] {
		t.Fatalf("the code's variables lack SECKILL_REDIS_ADDR or LOADTEST_LIMITS: the scan is broken (%d names)", len(vars))
	}
	return vars
}

// goStrings returns the values of the string literals of a Go source file.
func goStrings(src []byte) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", fset.Base(), len(src)), src, nil, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.STRING {
			if v, err := strconv.Unquote(lit); err == nil {
				out = append(out, v)
			}
		}
	}
}

// testNames are the Test, Benchmark and Fuzz functions of every _test.go file.
func testNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)\(`)
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out["TestDocs"] || !out["TestFlashCrowd"] {
		t.Fatalf("the tests found lack TestDocs or TestFlashCrowd: the scan is broken (%d names)", len(out))
	}
	return out
}

func routerRoutes(t *testing.T) []route {
	t.Helper()
	engine, ok := handler.New(handlertest.Services(handlertest.Unserved{}), handler.Options{JWTSecret: strings.Repeat("x", 32)}).Routes().(*gin.Engine)
	if !ok {
		t.Fatal("handler.Routes() is no longer a *gin.Engine; adapt this test to list its routes")
	}
	var out []route
	for _, r := range engine.Routes() {
		out = append(out, route{r.Method, r.Path})
	}
	if len(out) < 20 {
		t.Fatalf("the router lists only %d routes", len(out))
	}
	return out
}

var (
	fence      = regexp.MustCompile("(?m)^ {0,3}(```|~~~)")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	// [text](target) and ![alt](target), with an optional title.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	heading    = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	// What GitHub drops from a heading's text to make its anchor.
	notSlug = regexp.MustCompile(`[^\p{L}\p{M}\p{N}\p{Pc} -]`)
)

// withoutCode blanks fenced code blocks and inline code, where links are not links.
func withoutCode(md string) string {
	return blankFences(md, func(line string) string { return inlineCode.ReplaceAllString(line, "``") })
}

// withoutFences blanks fenced code blocks only: inline code stays, as part of the prose.
func withoutFences(md string) string {
	return blankFences(md, func(line string) string { return line })
}

// blankFences blanks the lines of fenced code blocks (keeping the line count) and passes
// every other line through prose.
func blankFences(md string, prose func(string) string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(md, "\n") {
		if fence.MatchString(line) {
			in = !in
		}
		if in || fence.MatchString(line) {
			b.WriteString("\n")
			continue
		}
		b.WriteString(prose(line))
	}
	return b.String()
}

// sectionAnchors are the anchors of md's ## headings, in order.
func sectionAnchors(md string) []string {
	var out []string
	for _, line := range strings.Split(withoutFences(md), "\n") {
		if !strings.HasPrefix(line, "## ") {
			continue
		}
		for a := range headingAnchors(line) {
			out = append(out, a)
		}
	}
	return out
}

func links(prose string) []string {
	var out []string
	for _, m := range inlineLink.FindAllStringSubmatch(prose, -1) {
		out = append(out, m[1])
	}
	for _, m := range refLink.FindAllStringSubmatch(prose, -1) {
		out = append(out, m[1])
	}
	return out
}

// headingAnchors are the anchors GitHub makes for md's headings (lower case, marks and
// punctuation dropped, spaces as hyphens, a repeated one numbered), and explicit
// <a id="..."> anchors.
func headingAnchors(md string) map[string]bool {
	out := map[string]bool{}
	in := false
	seen := map[string]int{}
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		if in {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		text := inlineLink.ReplaceAllStringFunc(m[1], func(l string) string {
			return l[strings.Index(l, "[")+1 : strings.LastIndex(l, "](")]
		})
		slug := strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
