package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// runRecord is what a run measured, written as JSON (-series FILE) so that plots are
// drawn from a run's own output (crowd plot): each phase's answers over time, its
// latency distribution, and the CPU each watched process spent meanwhile.
type runRecord struct {
	Mode    string         `json:"mode"`
	Label   string         `json:"label,omitempty"` // what was measured (a commit)
	Other   string         `json:"other,omitempty"` // compare: the other service's name, which its phases' names begin with
	Started time.Time      `json:"started"`
	Machine machineRecord  `json:"machine"`
	Slice   float64        `json:"slice_seconds"` // the longest stretch of a phase's timeline
	Phases  []phaseRecord  `json:"phases"`
	Figures []figureRecord `json:"figures,omitempty"`
}

type machineRecord struct {
	CPUs   int    `json:"cpus"`
	Model  string `json:"model,omitempty"`
	Kernel string `json:"kernel,omitempty"`
	Go     string `json:"go"`
}

// phaseRecord is one phase, or the turns of one load added up.
type phaseRecord struct {
	Name     string             `json:"name"`
	Seconds  float64            `json:"seconds"`
	Counts   map[string]int     `json:"counts"`
	Latency  latencyRecord      `json:"latency_ms"`
	CPU      map[string]float64 `json:"cpu_seconds,omitempty"` // per watched process, "crowd", "other"
	Timeline []sliceRecord      `json:"timeline"`
}

// latencyRecord is a distribution: a few quantiles and a histogram on log-spaced bounds
// (Counts[i] answers at or under Bounds[i] ms and above the bound before).
type latencyRecord struct {
	P50    float64   `json:"p50"`
	P90    float64   `json:"p90"`
	P99    float64   `json:"p99"`
	P999   float64   `json:"p999"`
	Max    float64   `json:"max"`
	Bounds []float64 `json:"bounds"`
	Counts []int     `json:"counts"`
}

// sliceRecord is the answers of a stretch of a phase (at most Slice seconds of one of
// its turns), T seconds after Started.
type sliceRecord struct {
	T       float64        `json:"t"`
	Seconds float64        `json:"seconds"`
	Counts  map[string]int `json:"n"`
}

// figureRecord is a line of the printed table of figures.
type figureRecord struct {
	Name     string  `json:"name"`
	Measured string  `json:"measured,omitempty"`
	Ratio    float64 `json:"ratio"` // -1 for none
	Want     string  `json:"want,omitempty"`
}

// recorder collects a run's phases; a nil recorder records nothing.
type recorder struct {
	path  string
	rec   runRecord
	watch cpuWatch
}

// newRecorder returns a recorder that writes to path, or nil for "".
func newRecorder(path, mode, label string, watch cpuWatch) *recorder {
	if path == "" {
		return nil
	}
	return &recorder{path: path, watch: watch, rec: runRecord{Mode: mode, Label: label,
		Started: time.Now().UTC(), Machine: thisMachine(), Slice: 1}}
}

// add records p (its answers, latencies, timeline and CPU).
func (r *recorder) add(p phase) {
	if r == nil {
		return
	}
	pr := phaseRecord{Name: p.name, Seconds: p.elapsed.Seconds(), Counts: p.tally.counts,
		Latency: distribution(p.tally.latencies), CPU: r.cpu(p.cpu)}
	// Each turn cut into equal slices of about Slice seconds (a short remainder would make
	// a rate of a few answers); an answer counts in the slice it came in.
	origin := r.rec.Started.UnixNano()
	for _, t := range p.turns {
		n := max(1, int(math.Round(t.elapsed.Seconds()/r.rec.Slice)))
		d := t.elapsed / time.Duration(n)
		for k := range n {
			lo, hi := t.start.Add(time.Duration(k)*d).UnixNano(), t.start.Add(time.Duration(k+1)*d).UnixNano()
			if k == n-1 {
				hi = t.start.Add(t.elapsed).UnixNano() + 1 // the last answer ends the turn
			}
			sl := sliceRecord{T: float64(lo-origin) / 1e9, Seconds: float64(hi-lo) / 1e9, Counts: map[string]int{}}
			for i, end := range p.tally.ends {
				if end >= lo && end < hi {
					sl.Counts[p.tally.labels[i]]++
				}
			}
			pr.Timeline = append(pr.Timeline, sl)
		}
	}
	r.rec.Phases = append(r.rec.Phases, pr)
}

// cpu is the span's CPU seconds per watched process, this tool ("crowd") and the rest
// of the machine ("other"); nil when it could not be read.
func (r *recorder) cpu(s cpuSpan) map[string]float64 {
	if !s.ok || s.wall <= 0 {
		return nil
	}
	out := map[string]float64{"crowd": s.self.Seconds()}
	known := s.self
	for i, name := range r.watch.names {
		if s.procs[i] >= 0 {
			out[name] = s.procs[i].Seconds()
			known += s.procs[i]
		}
	}
	out["other"] = max(0, s.busy-known).Seconds()
	return out
}

// figures records the printed table.
func (r *recorder) figures(fs []figure) {
	if r == nil {
		return
	}
	for _, f := range fs {
		r.rec.Figures = append(r.rec.Figures, figureRecord{Name: f.name, Measured: f.measured, Ratio: f.ratio, Want: f.want})
	}
}

// write writes the record as JSON.
func (r *recorder) write() error {
	if r == nil {
		return nil
	}
	b, err := json.MarshalIndent(r.rec, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return fmt.Errorf("-series: %w", err)
	}
	if err := os.WriteFile(r.path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("-series: %w", err)
	}
	return nil
}

// latencyBounds are the histogram's upper bounds in ms: ten per decade from 0.01 ms to
// 100 s, so a distribution's shape survives at any scale.
var latencyBounds = func() []float64 {
	var out []float64
	for e := -20; e <= 50; e++ {
		out = append(out, math.Round(math.Pow(10, float64(e)/10)*1e4)/1e4)
	}
	return out
}()

func distribution(lat []time.Duration) latencyRecord {
	s := slices.Clone(lat)
	slices.Sort(s)
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	out := latencyRecord{Bounds: latencyBounds, Counts: make([]int, len(latencyBounds))}
	if len(s) == 0 {
		return out
	}
	out.P50, out.P90, out.P99 = msOf(percentile(s, 50)), msOf(percentile(s, 90)), msOf(percentile(s, 99))
	out.P999, out.Max = msOf(percentile(s, 99.9)), msOf(s[len(s)-1])
	i := 0
	for _, d := range s {
		for i < len(latencyBounds)-1 && msOf(d) > latencyBounds[i] {
			i++
		}
		out.Counts[i]++
	}
	return out
}

// thisMachine says what the run ran on.
func thisMachine() machineRecord {
	m := machineRecord{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
