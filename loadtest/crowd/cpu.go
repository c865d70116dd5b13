package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuWatch reads from /proc how much CPU named processes, this tool and the whole
// machine used, so a phase can say where its CPU went. On a system without /proc it
// reports nothing.
type cpuWatch struct {
	names []string
	pids  []int
}

// parseWatch reads "api=123,worker=456".
func parseWatch(s string) (cpuWatch, error) {
	var c cpuWatch
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, pid, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 {
			return c, fmt.Errorf("-watch: want name=pid, got %q", part)
		}
		c.names, c.pids = append(c.names, name), append(c.pids, n)
	}
	return c, nil
}

// cpuSample is the CPU time used so far by each watched process, this tool, and the
// machine (busy and all), read at one moment.
type cpuSample struct {
	at        time.Time
	procs     []time.Duration // -1 when the process could not be read
	self      time.Duration
	busy, all time.Duration
	ok        bool
}

func (c cpuWatch) sample() cpuSample {
	s := cpuSample{at: time.Now(), procs: make([]time.Duration, len(c.pids))}
	for i, pid := range c.pids {
		s.procs[i] = procCPU(strconv.Itoa(pid))
	}
	s.self = procCPU("self")
	s.busy, s.all, s.ok = machineCPU()
	return s
}

// procCPU returns utime+stime of /proc/<pid>/stat, -1 if it cannot be read.
func procCPU(pid string) time.Duration {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(u+k) * clockTick
}

// machineCPU returns the busy and total CPU time of all cores from /proc/stat.
func machineCPU() (busy, all time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, false
	}
	var total, idle int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i >= 8 { // guest and guest_nice are already counted in user and nice
			break
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return time.Duration(total-idle) * clockTick, time.Duration(total) * clockTick, true
}

// cpuSpan is the CPU time each watched process, this tool and the machine used over
// one stretch of time or several added up (the turns of one load).
type cpuSpan struct {
	wall      time.Duration
	procs     []time.Duration // -1 when a process could not be read
	self      time.Duration
	busy, all time.Duration
	ok        bool
}

// cores is d spread over the span's wall time.
func (s cpuSpan) cores(d time.Duration) float64 {
	if s.wall <= 0 {
		return 0
	}
	return d.Seconds() / s.wall.Seconds()
}

// span is the CPU used between two samples.
func (c cpuWatch) span(from, to cpuSample) cpuSpan {
	s := cpuSpan{wall: to.at.Sub(from.at), procs: make([]time.Duration, len(c.names)),
		self: to.self - from.self, busy: to.busy - from.busy, all: to.all - from.all,
		ok: from.ok && to.ok && to.at.After(from.at)}
	for i := range c.names {
		s.procs[i] = -1
		if from.procs[i] >= 0 && to.procs[i] >= 0 {
			s.procs[i] = to.procs[i] - from.procs[i]
		}
	}
	return s
}

// add adds o's times to s (s may be the zero span).
func (s *cpuSpan) add(o cpuSpan) {
	if s.procs == nil {
		*s = o
		s.procs = append([]time.Duration(nil), o.procs...)
		return
	}
	s.wall, s.self, s.busy, s.all, s.ok = s.wall+o.wall, s.self+o.self, s.busy+o.busy, s.all+o.all, s.ok && o.ok
	for i, d := range o.procs {
		if s.procs[i] < 0 || d < 0 {
			s.procs[i] = -1
			continue
		}
		s.procs[i] += d
	}
}

// usage says, in cores, what each watched process, this tool and everything else used
// between two samples: "api 1.10, worker 0.20, crowd 0.55, other 0.10; busy 1.95 of 2 cores".
func (c cpuWatch) usage(from, to cpuSample) string { return c.describe(c.span(from, to)) }

// describe is usage for a span.
func (c cpuWatch) describe(s cpuSpan) string {
	if s.wall <= 0 || !s.ok {
		return ""
	}
	cores := s.cores
	var parts []string
	known := s.self
	for i, name := range c.names {
		if s.procs[i] < 0 {
			continue
		}
		known += s.procs[i]
		parts = append(parts, fmt.Sprintf("%s %.2f", name, cores(s.procs[i])))
	}
	parts = append(parts, fmt.Sprintf("crowd %.2f", cores(s.self)),
		fmt.Sprintf("other %.2f", cores(max(0, s.busy-known))))
	return fmt.Sprintf("%s; busy %.2f of %.0f cores", strings.Join(parts, ", "), cores(s.busy), cores(s.all))
}

// perEvent says how much CPU each watched process and this tool spent per event (a
// purchase, an answer) over the span: "api1 118 µs, redis 61 µs, ..., crowd 40 µs".
func (c cpuWatch) perEvent(s cpuSpan, events int) string {
	if events <= 0 || !s.ok {
		return ""
	}
	var parts []string
	for i, name := range c.names {
		if s.procs[i] < 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f µs", name, float64(s.procs[i].Microseconds())/float64(events)))
	}
	parts = append(parts, fmt.Sprintf("crowd %.0f µs", float64(s.self.Microseconds())/float64(events)))
	return strings.Join(parts, ", ")
}

// serverSide is the CPU all watched processes (the service and its servers, not this
// tool) spent per event over the span: "212 µs".
func (c cpuWatch) serverSide(s cpuSpan, events int) string {
	if events <= 0 || !s.ok {
		return ""
	}
	var sum time.Duration
	for _, d := range s.procs {
		if d > 0 {
			sum += d
		}
	}
	return fmt.Sprintf("%.0f µs", float64(sum.Microseconds())/float64(events))
}
