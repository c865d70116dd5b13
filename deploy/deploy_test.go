// Package deploy holds the checks of the files an operator deploys with: the compose
// file, the Prometheus alert rules and the Grafana dashboard. No engine runs here, so
// each file is checked by the tool that reads it, offline.
package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"seckill/internal/config"
)

// root is the repository's top directory.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// tool returns the path of a command the set-up installs, and fails the test when it
// is missing: a check that cannot run must not pass.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is missing: scripts/services.sh up installs it (Debian package %s)", name, pkg)
	}
	return p
}

// TestComposeConfig has docker-compose read docker-compose.yml with each profile, so a
// misspelt key or a broken reference fails here though nothing can start it.
func TestComposeConfig(t *testing.T) {
	compose := tool(t, "docker-compose", "docker-compose")
	for _, profile := range []string{"", "cluster", "monitoring"} {
		t.Run("profile="+profile, func(t *testing.T) {
			args := []string{"-f", filepath.Join(root(t), "docker-compose.yml")}
			if profile != "" {
				args = append(args, "--profile", profile)
			}
			cmd := exec.Command(compose, append(args, "config", "-q")...)
			cmd.Env = append(os.Environ(), "SECKILL_JWT_SECRET=0123456789abcdef0123456789abcdef")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("docker-compose config: %v\n%s", err, out)
			}
		})
	}
}

// alertRules is what the tests read of a rules file.
type alertRules struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// readAlerts returns the alerts of deploy/prometheus/alerts.yml by name, with their
// expressions.
func readAlerts(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var r alertRules
	if err := yaml.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			out[rule.Alert] = rule.Expr
		}
	}
	return out
}

// TestAlertRules checks the rules with promtool and runs their unit tests, and
// fails when an alert has no test that fires it.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool", "prometheus")
	dir := filepath.Join(root(t), "deploy", "prometheus")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
	}

	b, err := os.ReadFile(filepath.Join(dir, "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	fired := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			fired[a.Alertname] = fired[a.Alertname] || len(a.ExpAlerts) > 0
		}
	}
	alerts := readAlerts(t)
	if len(alerts) == 0 {
		t.Fatal("no alert in alerts.yml")
	}
	for name := range alerts {
		if !fired[name] {
			t.Errorf("alert %s has no test case in alerts_test.yml that fires it", name)
		}
	}
}

// TestDashboardShowsAlertSignals: every metric an alert reads is plotted on the Grafana
// dashboard, so whoever is paged sees the signal's history beside the others. (Which
// metrics the binaries export is e2e's TestOperatorFilesNameExportedMetrics.)
func TestDashboardShowsAlertSignals(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root(t), "deploy", "grafana", "dashboards", "seckill.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	// A histogram's series (_bucket, _sum, _count) count as the histogram.
	metric := regexp.MustCompile(`\bseckill_[a-z0-9_]+\b`)
	family := func(m string) string {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			m = strings.TrimSuffix(m, suffix)
		}
		return m
	}
	plotted := map[string]bool{}
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			for _, m := range metric.FindAllString(q.Expr, -1) {
				plotted[family(m)] = true
			}
		}
	}
	alerts := readAlerts(t)
	for name, expr := range alerts {
		for _, m := range metric.FindAllString(expr, -1) {
			if !plotted[family(m)] {
				t.Errorf("alert %s reads %s, which no panel of the dashboard plots", name, family(m))
			}
		}
	}
	if len(plotted) == 0 || len(alerts) == 0 {
		t.Fatalf("read %d metrics plotted and %d alerts", len(plotted), len(alerts))
	}
}

// TestRunbookCoversAlerts: every alert's runbook_url is an entry of docs/runbook.md,
// and the entry names the alert, so whoever is paged finds what to do.
func TestRunbookCoversAlerts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root(t), "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	runbook := string(b)
	sections := map[string]string{} // by GitHub's anchor of the heading
	heading := regexp.MustCompile(`(?m)^## (.+)$`)
	locs := heading.FindAllStringSubmatchIndex(runbook, -1)
	for i, l := range locs {
		end := len(runbook)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		anchor := strings.ToLower(runbook[l[2]:l[3]])
		anchor = regexp.MustCompile(`[^a-z0-9 -]`).ReplaceAllString(anchor, "")
		sections[strings.ReplaceAll(anchor, " ", "-")] = runbook[l[0]:end]
	}
	b, err = os.ReadFile(filepath.Join(root(t), "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var r alertRules
	if err := yaml.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			n++
			url := rule.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, "docs/runbook.md#")
			section, found := sections[anchor]
			switch {
			case !ok:
				t.Errorf("%s: runbook_url %q is not an entry of docs/runbook.md", rule.Alert, url)
			case !found:
				t.Errorf("%s: docs/runbook.md has no heading for #%s", rule.Alert, anchor)
			case !strings.Contains(section, "`"+rule.Alert+"`"):
				t.Errorf("%s: the entry #%s of docs/runbook.md does not name it", rule.Alert, anchor)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alert read")
	}
}

// TestComposeNamesKnownVariables: every SECKILL_ variable the compose file sets is one
// the binaries read (config.Vars, <NAME>_FILE of a secret) or one of the nginx
// template's, so a misspelt setting cannot be silently ignored.
func TestComposeNamesKnownVariables(t *testing.T) {
	known := map[string]bool{}
	for _, v := range config.Vars {
		known[v.Name] = true
		if v.Secret {
			known[v.Name+"_FILE"] = true
		}
	}
	tmpl, err := os.ReadFile(filepath.Join(root(t), "deploy", "nginx", "seckill.conf.template"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\$\{([A-Z0-9_]+)\}`).FindAllStringSubmatch(string(tmpl), -1) {
		known[m[1]] = true
	}
	compose, err := os.ReadFile(filepath.Join(root(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// A variable set: "  NAME: value" in an environment block.
	set := regexp.MustCompile(`(?m)^\s+(SECKILL_[A-Z0-9_]+):`).FindAllStringSubmatch(string(compose), -1)
	if len(set) < 5 {
		t.Fatalf("found %d variables set in docker-compose.yml", len(set))
	}
	for _, m := range set {
		if !known[m[1]] {
			t.Errorf("docker-compose.yml sets %s, which neither binary nor the nginx template reads", m[1])
		}
	}
}
