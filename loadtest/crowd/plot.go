package main

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// runPlot draws the report's plots from run records (-series) as SVG files in dir:
// throughput.svg (answers per second over time, by phase, from the ratios record),
// latency.svg (the share of answers within a latency, by phase, from every record) and
// cpu.svg (CPU per purchase or answer by process, from the compare record, else the
// ratios record). Plain SVG written here: no plotting library, nothing to install.
func runPlot(dir string, files []string) error {
	var ratios, compare *runRecord
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r runRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		switch r.Mode {
		case "ratios":
			ratios = &r
		case "compare":
			compare = &r
		default:
			return fmt.Errorf("%s: a record of mode %q, want ratios or compare", f, r.Mode)
		}
	}
	if ratios == nil && compare == nil {
		return fmt.Errorf("no record given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name, svg string) error { return os.WriteFile(filepath.Join(dir, name), []byte(svg), 0o644) }
	if ratios != nil {
		if err := write("perf-throughput.svg", throughputChart(*ratios)); err != nil {
			return err
		}
	}
	if err := write("perf-latency.svg", latencyChart(ratios, compare)); err != nil {
		return err
	}
	source := compare
	if source == nil {
		source = ratios
	}
	return write("perf-cpu.svg", cpuChart(*source))
}

// phaseKind folds the phases of a record into the loads they measure: the healthz
// phases are one load, each round of compare's is its load.
func phaseKind(name string) string {
	if strings.HasPrefix(name, "healthz") {
		return "healthz"
	}
	return name
}

// throughputChart is every load's answers per second over the run, one stroke per slice
// of its turns, so loads that took turns show as the stretches they had.
func throughputChart(r runRecord) string {
	type seg struct{ x0, x1, y float64 }
	series := map[string][]seg{}
	var order []string
	var end, top float64
	for _, p := range r.Phases {
		k := phaseKind(p.Name)
		if _, ok := series[k]; !ok {
			order = append(order, k)
		}
		for _, sl := range p.Timeline {
			n := 0
			for _, c := range sl.Counts {
				n += c
			}
			if sl.Seconds <= 0 {
				continue
			}
			sg := seg{sl.T, sl.T + sl.Seconds, float64(n) / sl.Seconds}
			series[k] = append(series[k], sg)
			end, top = max(end, sg.x1), max(top, sg.y)
		}
	}
	c := newChart("Answers per second over the run, by load ("+r.Label+")", "seconds since the start", "answers per second")
	c.scale(0, end, 0, niceMax(top), false)
	for i, k := range order {
		col := palette[i%len(palette)]
		for _, sg := range series[k] {
			fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3" clip-path="url(#area)"/>`+"\n",
				c.px(sg.x0), c.py(sg.y), c.px(sg.x1), c.py(sg.y), col)
		}
		c.legend(i, k, col)
	}
	return c.end()
}

// latencyChart is, for each load, the share of its answers at or under each latency:
// the compare record's loads when there is one (this service beside the other), else
// the ratios record's.
func latencyChart(ratios, compare *runRecord) string {
	r := compare
	if r == nil {
		r = ratios
	}
	merged := map[string]*latencyRecord{}
	var order []string
	for _, p := range r.Phases {
		k := phaseKind(p.Name)
		if k == "group seats" || strings.Contains(k, "limits") {
			continue
		}
		if merged[k] == nil {
			l := p.Latency
			l.Counts = slices.Clone(l.Counts)
			merged[k] = &l
			order = append(order, k)
			continue
		}
		for i, n := range p.Latency.Counts {
			merged[k].Counts[i] += n
		}
	}
	c := newChart("Share of answers within a latency, by load ("+r.Label+")", "latency (ms, log scale)", "share of answers")
	c.scale(math.Log10(0.1), math.Log10(1000), 0, 1, true)
	for i, k := range order {
		l := merged[k]
		total := 0
		for _, n := range l.Counts {
			total += n
		}
		if total == 0 {
			continue
		}
		var pts []point
		seen := 0
		for j, n := range l.Counts {
			seen += n
			pts = append(pts, point{math.Log10(l.Bounds[j]), float64(seen) / float64(total)})
		}
		col := palette[i%len(palette)]
		c.line(pts, col)
		c.legend(i, loadName(*r, k), col)
	}
	return c.end()
}

// loadName names a load for a legend: in a compare record, whose service it is.
func loadName(r runRecord, k string) string {
	if r.Mode != "compare" {
		return k
	}
	if rest, ok := strings.CutPrefix(k, r.Other+" "); ok && r.Other != "" {
		return r.Other + ": " + rest
	}
	return "this service: " + k
}

// cpuChart is, for each load that sells or refuses, the CPU per answer of each process,
// stacked: what one purchase (or sold-out answer) costs the machine, part by part.
func cpuChart(r runRecord) string {
	type bar struct {
		name  string
		parts map[string]float64 // µs per event by process
	}
	var bars []bar
	procs := map[string]bool{}
	byLoad := map[string]*phaseRecord{}
	var order []string
	for _, p := range r.Phases {
		k := phaseKind(p.Name)
		if k == "healthz" || k == "group seats" || p.CPU == nil {
			continue
		}
		if byLoad[k] == nil {
			cp := phaseRecord{Name: k, Counts: map[string]int{}, CPU: map[string]float64{}}
			byLoad[k], order = &cp, append(order, k)
		}
		for l, n := range p.Counts {
			byLoad[k].Counts[l] += n
		}
		for proc, s := range p.CPU {
			byLoad[k].CPU[proc] += s
		}
	}
	for _, k := range order {
		p := byLoad[k]
		events := p.Counts["202"] + p.Counts["200 ok"] + p.Counts["409 sold_out"] + refusals(p.Counts)
		if events == 0 {
			continue
		}
		b := bar{name: loadName(r, k), parts: map[string]float64{}}
		for proc, s := range p.CPU {
			if proc == "other" { // the rest of a shared machine: not the load's
				continue
			}
			b.parts[proc] = s * 1e6 / float64(events)
			procs[proc] = true
		}
		bars = append(bars, b)
	}
	names := make([]string, 0, len(procs))
	for p := range procs {
		names = append(names, p)
	}
	sort.Strings(names)
	c := newChart("CPU per purchase or answer, by process ("+r.Label+")", "µs of CPU per answer", "")
	c.left = 230
	var most float64
	for _, b := range bars {
		sum := 0.0
		for _, v := range b.parts {
			sum += v
		}
		most = max(most, sum)
	}
	c.scale(0, niceMax(most), 0, float64(len(bars)), false)
	c.noYTicks = true
	rowH := c.plotH() / float64(max(len(bars), 1))
	for i, b := range bars {
		x := 0.0
		y := c.top + float64(i)*rowH + rowH*0.2
		for j, p := range names {
			v := b.parts[p]
			if v <= 0 {
				continue
			}
			col := palette[j%len(palette)]
			fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.0f µs</title></rect>`+"\n",
				c.px(x), y, c.px(x+v)-c.px(x), rowH*0.6, col, html.EscapeString(b.name), p, v)
			x += v
		}
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="12">%s</text>`+"\n",
			c.left-6, y+rowH*0.35, html.EscapeString(b.name))
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" font-size="11">%.0f µs</text>`+"\n", c.px(x)+4, y+rowH*0.35, x)
	}
	for j, p := range names {
		c.legend(j, p, palette[j%len(palette)])
	}
	return c.end()
}

type point struct{ x, y float64 }

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"}

// chart is an SVG plot area with axes: data coordinates map onto the area inside the
// margins.
type chart struct {
	b                        strings.Builder
	w, h                     float64
	left, right, top, bottom float64
	x0, x1, y0, y1           float64
	logX, noYTicks           bool
	title, xLabel, yLabel    string
}

func newChart(title, xLabel, yLabel string) *chart {
	c := &chart{w: 860, h: 420, left: 70, right: 200, top: 40, bottom: 50, title: title, xLabel: xLabel, yLabel: yLabel}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`+"\n",
		c.w, c.h, c.w, c.h)
	fmt.Fprintf(&c.b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&c.b, `<clipPath id="area"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`+"\n",
		c.left, c.top, c.plotW(), c.plotH())
	return c
}

func (c *chart) plotW() float64 { return c.w - c.left - c.right }
func (c *chart) plotH() float64 { return c.h - c.top - c.bottom }
func (c *chart) px(x float64) float64 {
	return c.left + (x-c.x0)/(c.x1-c.x0)*c.plotW()
}
func (c *chart) py(y float64) float64 { return c.top + c.plotH() - (y-c.y0)/(c.y1-c.y0)*c.plotH() }

// scale sets the data ranges; the axes, ticks and labels are drawn by end.
func (c *chart) scale(x0, x1, y0, y1 float64, logX bool) {
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	c.x0, c.x1, c.y0, c.y1, c.logX = x0, x1, y0, y1, logX
}

func (c *chart) line(pts []point, col string) {
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", c.px(p.x), c.py(p.y))
	}
	fmt.Fprintf(&c.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" clip-path="url(#area)"/>`+"\n", b.String(), col)
}

func (c *chart) legend(i int, name, col string) {
	x, y := c.w-c.right+16, c.top+10+float64(i)*20
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/><text x="%.1f" y="%.1f" font-size="12">%s</text>`+"\n",
		x, y-10, col, x+18, y, html.EscapeString(name))
}

func (c *chart) end() string {
	fmt.Fprintf(&c.b, `<text x="%.1f" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", c.left, html.EscapeString(c.title))
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", c.left, c.top, c.plotW(), c.plotH())
	for _, t := range ticks(c.x0, c.x1, c.logX) {
		x := c.px(t)
		label := trimFloat(t)
		if c.logX {
			label = trimFloat(math.Pow(10, t))
		}
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s</text>`+"\n",
			x, c.top, x, c.top+c.plotH(), x, c.top+c.plotH()+16, label)
	}
	if !c.noYTicks {
		for _, t := range ticks(c.y0, c.y1, false) {
			y := c.py(t)
			fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end" font-size="11">%s</text>`+"\n",
				c.left, y, c.left+c.plotW(), y, c.left-6, y+4, trimFloat(t))
		}
	}
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12">%s</text>`+"\n",
		c.left+c.plotW()/2, c.h-12, html.EscapeString(c.xLabel))
	if c.yLabel != "" {
		fmt.Fprintf(&c.b, `<text x="16" y="%.1f" text-anchor="middle" font-size="12" transform="rotate(-90 16 %.1f)">%s</text>`+"\n",
			c.top+c.plotH()/2, c.top+c.plotH()/2, html.EscapeString(c.yLabel))
	}
	c.b.WriteString("</svg>\n")
	return c.b.String()
}

// ticks are about five round values between lo and hi (whole decades on a log axis).
func ticks(lo, hi float64, logAxis bool) []float64 {
	var out []float64
	if logAxis {
		for e := math.Ceil(lo); e <= hi+1e-9; e++ {
			out = append(out, e)
		}
		return out
	}
	step := niceStep((hi - lo) / 5)
	for t := math.Ceil(lo/step) * step; t <= hi+step*1e-9; t += step {
		out = append(out, t)
	}
	return out
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// niceMax rounds v up to a round value, so the top tick sits at the frame.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	step := niceStep(v / 5)
	return math.Ceil(v/step) * step
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
