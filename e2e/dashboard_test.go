package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"seckill/internal/testutil"
)

var metricName = regexp.MustCompile(`\b(?:seckill|process|go)_[a-z0-9_]+\b`)

// exported lists the metric families a /metrics page has by name, with their type.
func exported(page string) map[string]string {
	families := map[string]string{}
	for _, line := range strings.Split(page, "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = f[3]
		}
	}
	return families
}

// series lists the names of the series of families: a histogram's or a summary's
// _bucket, _sum and _count beside its own name.
func series(families map[string]string) map[string]bool {
	names := map[string]bool{}
	for n, typ := range families {
		names[n] = true
		if typ == "histogram" || typ == "summary" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[n+s] = true
			}
		}
	}
	return names
}

// TestOperatorFilesNameExportedMetrics starts an API and a worker with every metric on
// (a master with a replica and SECKILL_REDIS_MIN_REPLICAS=1), puts a purchase
// through, reads both /metrics pages, and holds the operator's files to them: the
// Grafana dashboard's and the alert rules' queries name only exported metrics, and
// docs/metrics.md lists every exported family with its type and the alerts that
// read it, and nothing else.
func TestOperatorFilesNameExportedMetrics(t *testing.T) {
	master := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync-delay", "0")
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := testutil.StartRedis(t, "--replicaof", host, port)
	for i := 0; ; i++ {
		info, _ := replica.Client(t).Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if i == 500 {
			t.Fatalf("the replica never linked:\n%s", info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := testutil.StartStackOnTopology(t, testutil.MySQL(t), master.Topology(), 1, 1, "SECKILL_REDIS_MIN_REPLICAS=1")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := c.createSale(admin, 5, 1)
	// A replica that has just linked may not confirm the first reservation within the
	// bound (503 unavailable, "0 of 1 replicas"): the buyer retries with the same key, as
	// a client does.
	var buy response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		buy = c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, 5, false),
			map[string]int{"quantity": 1}, "Idempotency-Key", "metrics-buy")
		if buy.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
	}
	if buy.Status != 202 {
		t.Fatalf("buy: %d %s", buy.Status, buy.Body)
	}
	c.waitDrained(admin, a.ID, time.Minute)
	// Every job of a period under a minute has run once (prune-webhooks, once a minute,
	// need not have): their series are on the worker's page.
	wc := newClient(t, "")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		page := string(wc.must("GET", s.WorkerMetricsURL, "", nil).Body)
		missing := ""
		for _, job := range []string{"expire-orders", "fail-groups", "return-units", "repair-queue", "admit-lines", "rebuild-lost-sales"} {
			if !strings.Contains(page, `seckill_job_runs_total{name="`+job+`"`) {
				missing = job
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job %s has not run 30 s on", missing)
		}
	}

	c.must("GET", "/api/v1/activities", "", nil) // the stock gauges show the sales of the last public list
	api := exported(string(newClient(t, "").must("GET", s.MetricsURL, "", nil).Body))
	worker := exported(string(newClient(t, "").must("GET", s.WorkerMetricsURL, "", nil).Body))
	families := map[string]string{}
	for _, m := range []map[string]string{api, worker} {
		for n, typ := range m {
			families[n] = typ
		}
	}
	names := series(families)

	t.Run("dashboard", func(t *testing.T) {
		raw, err := os.ReadFile("../deploy/grafana/dashboards/seckill.json")
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			Panels []struct {
				Title   string
				Targets []struct{ Expr string }
			}
		}
		if err := json.Unmarshal(raw, &dash); err != nil {
			t.Fatal(err)
		}
		if len(dash.Panels) < 8 {
			t.Fatalf("the dashboard has %d panels", len(dash.Panels))
		}
		for _, p := range dash.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, q := range p.Targets {
				used := metricName.FindAllString(q.Expr, -1)
				if len(used) == 0 {
					t.Errorf("panel %q: query %q names no metric", p.Title, q.Expr)
				}
				for _, m := range used {
					if !names[m] {
						t.Errorf("panel %q: %s is not exported by the API or the worker", p.Title, m)
					}
				}
			}
		}
	})

	alerts := alertMetrics(t)
	t.Run("alerts", func(t *testing.T) {
		for alert, used := range alerts {
			for _, m := range used {
				if !names[m] {
					t.Errorf("alert %s: %s is not exported by the API or the worker", alert, m)
				}
			}
		}
	})

	t.Run("docs/metrics.md", func(t *testing.T) {
		rows := metricsReference(t)
		for name, typ := range families {
			if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
				name = name[:strings.IndexByte(name, '_')] + "_*"
				typ = "various"
			}
			r, ok := rows[name]
			switch {
			case !ok:
				t.Errorf("%s (%s) is exported but not in docs/metrics.md", name, typ)
			case r.typ != typ:
				t.Errorf("%s: docs/metrics.md says %s, the binaries export a %s", name, r.typ, typ)
			}
			if binaries := whoExports(name, api, worker); ok && r.binaries != binaries {
				t.Errorf("%s: docs/metrics.md says exported by %q, it is by %q", name, r.binaries, binaries)
			}
		}
		for name, r := range rows {
			if _, ok := families[name]; !ok && !strings.HasSuffix(name, "_*") {
				t.Errorf("docs/metrics.md lists %s, which neither binary exports", name)
			}
			want := []string{}
			for alert, used := range alerts {
				for _, m := range used {
					if m == name || strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count") == name {
						want = append(want, alert)
						break
					}
				}
			}
			slices.Sort(want)
			if !slices.Equal(r.alerts, want) {
				t.Errorf("%s: docs/metrics.md names the alerts %v, the alerts that read it are %v", name, r.alerts, want)
			}
		}
	})
}

// whoExports says which binaries' pages hold a family: "api", "worker" or
// "api, worker" (name may be a prefix_* family).
func whoExports(name string, api, worker map[string]string) string {
	has := func(m map[string]string) bool {
		if p, ok := strings.CutSuffix(name, "*"); ok {
			for n := range m {
				if strings.HasPrefix(n, p) {
					return true
				}
			}
			return false
		}
		_, ok := m[name]
		return ok
	}
	var by []string
	if has(api) {
		by = append(by, "api")
	}
	if has(worker) {
		by = append(by, "worker")
	}
	return strings.Join(by, ", ")
}

// alertMetrics reads deploy/prometheus/alerts.yml: the metrics each alert's
// expression names (up, Prometheus' own, aside).
func alertMetrics(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile("../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = metricName.FindAllString(r.Expr, -1)
		}
	}
	if len(out) == 0 {
		t.Fatal("no alert in deploy/prometheus/alerts.yml")
	}
	return out
}

type referenceRow struct {
	typ, binaries string
	alerts        []string
}

// referenceRow matches a row of docs/metrics.md's table: | `name` | type | labels |
// binaries | meaning | alerts |.
var referenceLine = regexp.MustCompile("^\\| `([a-z0-9_*]+)` \\| ([a-z]+) \\|[^|]*\\| ([a-z, ]+) \\|[^|]*\\|([^|]*)\\|$")

// metricsReference reads the rows of docs/metrics.md's table by metric name.
func metricsReference(t *testing.T) map[string]referenceRow {
	t.Helper()
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]referenceRow{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		m := referenceLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/metrics.md: a row not in the table's shape: %s", line)
			continue
		}
		r := referenceRow{typ: m[2], binaries: m[3], alerts: []string{}}
		for _, a := range strings.Split(m[4], ",") {
			if a = strings.Trim(strings.TrimSpace(a), "`"); a != "" && a != "none" {
				r.alerts = append(r.alerts, a)
			}
		}
		slices.Sort(r.alerts)
		rows[m[1]] = r
	}
	if len(rows) == 0 {
		t.Fatal("docs/metrics.md has no table rows")
	}
	return rows
}
