package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"seckill/internal/testutil"
)

var metricName = regexp.MustCompile(`\b(?:seckill|process|go)_[a-z0-9_]+\b`)

// exported lists the metric names a /metrics page has: every family's name, and for
// histograms and summaries their _bucket, _sum and _count series.
func exported(page string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(page, "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
			if f[3] == "histogram" || f[3] == "summary" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[f[2]+s] = true
				}
			}
		}
	}
	return names
}

// TestDashboardNamesExportedMetrics: every query of the Grafana dashboard
// (deploy/grafana/dashboards/seckill.json) names only metrics that the API or the
// worker export, read from their /metrics after a purchase went through.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	s := testutil.StartStack(t)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := c.createSale(admin, 5, 1)
	buy := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, 5, false), map[string]int{"quantity": 1})
	if buy.Status != 202 {
		t.Fatalf("buy: %d %s", buy.Status, buy.Body)
	}
	c.waitDrained(admin, a.ID, time.Minute)
	names := exported(string(c.must("GET", "/metrics", "", nil).Body))
	for n := range exported(string(newClient(t, "").must("GET", s.WorkerMetricsURL, "", nil).Body)) {
		names[n] = true
	}

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
}
