package main

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecordAndPlot records two phases by hand, writes the record, reads it back and
// draws the plots from it: the timeline puts each answer in its bucket, the histogram
// holds every answer, and each plot is well-formed SVG that draws every load.
func TestRecordAndPlot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "records", "run.json") // a directory the recorder makes
	watch := cpuWatch{names: []string{"api"}, pids: []int{os.Getpid()}}
	rec := newRecorder(path, "ratios", "test", watch)
	origin := rec.rec.Started.UnixNano()

	phaseOf := func(name string, answers []answer, at []time.Duration, from, length time.Duration) phase {
		tl := newTally()
		for i, a := range answers {
			tl.add(a)
			tl.ends[i] = origin + int64(at[i])
		}
		before := watch.sample()
		// Spin until /proc counts more CPU for this process (it counts in ticks of 10 ms).
		for deadline := time.Now().Add(5 * time.Second); procCPU("self") <= before.procs[0] && time.Now().Before(deadline); {
		}
		return phase{name: name, tally: tl, elapsed: length, cpu: watch.span(before, watch.sample()),
			turns: []turn{{rec.rec.Started.Add(from), length}}}
	}
	ok := answer{status: 202, latency: 3 * time.Millisecond}
	sold := answer{status: 409, code: "sold_out", latency: 400 * time.Microsecond}
	rec.add(phaseOf("healthz 1", []answer{{status: 200, latency: time.Millisecond}}, []time.Duration{100 * time.Millisecond},
		0, 200*time.Millisecond))
	rec.add(phaseOf("purchase", []answer{ok, ok, sold}, []time.Duration{300 * time.Millisecond, 400 * time.Millisecond, 2300 * time.Millisecond},
		200*time.Millisecond, 2400*time.Millisecond))
	rec.figures([]figure{{name: "successful purchases/s vs healthz", measured: "2/s", ratio: 0.25, want: ">= 0.20"}})
	if err := rec.write(); err != nil {
		t.Fatal(err)
	}
	var got runRecord
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Phases) != 2 || got.Label != "test" || got.Machine.CPUs < 1 || len(got.Figures) != 1 {
		t.Fatalf("record: %d phases, label %q, %d CPUs, %d figures", len(got.Phases), got.Label, got.Machine.CPUs, len(got.Figures))
	}
	buy := got.Phases[1]
	// One turn of 2.4 s from 0.2 s: two slices of 1.2 s, [0.2, 1.4) and [1.4, 2.6]; the
	// answers at 0.3 and 0.4 s fall in the first, the one at 2.3 s in the second.
	if len(buy.Timeline) != 2 || math.Abs(buy.Timeline[0].T-0.2) > 1e-6 || buy.Timeline[0].Counts["202"] != 2 ||
		math.Abs(buy.Timeline[1].Seconds-1.2) > 1e-6 || buy.Timeline[1].Counts["409 sold_out"] != 1 ||
		buy.Timeline[1].Counts["202"] != 0 {
		t.Errorf("purchase timeline: %+v", buy.Timeline)
	}
	total := 0
	for _, n := range buy.Latency.Counts {
		total += n
	}
	if total != 3 || buy.Latency.Max != 3 || buy.Latency.P50 != 3 {
		t.Errorf("purchase latency: %d answers in the histogram, p50 %v, max %v ms", total, buy.Latency.P50, buy.Latency.Max)
	}
	if buy.CPU == nil || buy.CPU["api"] <= 0 {
		t.Errorf("purchase CPU: %v, want this process's seconds as api", buy.CPU)
	}

	out := filepath.Join(dir, "img")
	if err := runPlot(out, []string{path}); err != nil {
		t.Fatal(err)
	}
	for name, wants := range map[string][]string{
		"perf-throughput.svg": {"healthz", "purchase"},
		"perf-latency.svg":    {"healthz", "purchase"},
		"perf-cpu.svg":        {"purchase", "api"},
	} {
		svg, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(strings.NewReader(string(svg)))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s is not well-formed: %v", name, err)
			}
		}
		for _, w := range wants {
			if !strings.Contains(string(svg), ">"+w) {
				t.Errorf("%s does not name %q", name, w)
			}
		}
	}
}
