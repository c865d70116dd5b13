package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// workSample is what MySQL and Redis say they have done so far: MySQL's global status
// counters and Redis's calls and time per command (summed over the nodes given).
type workSample struct {
	mysql map[string]int64
	calls map[string]int64 // per command, e.g. "evalsha"
	usec  map[string]int64 // Redis's own time in each command
}

// workWatch reads the work samples of a MySQL server and of Redis nodes, so that a
// phase can say what one order cost each: rows read and written, statements and
// commits, Redis commands and Redis's time in them.
type workWatch struct {
	db    *sql.DB
	nodes []*redis.Client
}

func newWorkWatch(db *sql.DB, redisAddrs string) workWatch {
	w := workWatch{db: db}
	for a := range strings.SplitSeq(redisAddrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			w.nodes = append(w.nodes, redis.NewClient(&redis.Options{Addr: a}))
		}
	}
	return w
}

func (w workWatch) close() {
	for _, n := range w.nodes {
		n.Close()
	}
}

func (w workWatch) sample(ctx context.Context) (workSample, error) {
	s := workSample{mysql: map[string]int64{}, calls: map[string]int64{}, usec: map[string]int64{}}
	if w.db == nil { // nothing to read: printWork prints nothing
		return s, nil
	}
	rows, err := w.db.QueryContext(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return s, fmt.Errorf("mysql status: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return s, fmt.Errorf("mysql status: %w", err)
		}
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			s.mysql[name] = n
		}
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("mysql status: %w", err)
	}
	for _, n := range w.nodes {
		info, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return s, fmt.Errorf("redis commandstats of %s: %w", n.Options().Addr, err)
		}
		addCommandstats(s, info)
	}
	return s, nil
}

// addCommandstats adds INFO commandstats' lines
// ("cmdstat_evalsha:calls=24680,usec=9901530,...") to s.
func addCommandstats(s workSample, info string) {
	for line := range strings.SplitSeq(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		for f := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "calls":
				s.calls[name] += n
			case "usec":
				s.usec[name] += n
			}
		}
	}
}

// mysqlWork names the status counters (MariaDB's; MySQL has no Rows_read) an order
// costs MySQL, as printed.
var mysqlWork = []struct {
	label    string
	counters []string
}{
	{"rows read", []string{"Rows_read"}},
	{"written", []string{"Handler_write"}},
	{"updated", []string{"Handler_update"}},
	{"deleted", []string{"Handler_delete"}},
	{"index reads", []string{"Handler_read_first", "Handler_read_key", "Handler_read_last",
		"Handler_read_next", "Handler_read_prev", "Handler_read_rnd", "Handler_read_rnd_next"}},
	{"statements", []string{"Queries"}},
	{"commits", []string{"Com_commit"}},
	{"fsyncs", []string{"Innodb_data_fsyncs"}},
}

// printWork prints what each of orders cost MySQL and Redis between two samples.
func printWork(w io.Writer, orders int, from, to workSample) {
	if orders <= 0 || len(to.mysql) == 0 {
		return
	}
	per := func(d int64) string { return strconv.FormatFloat(float64(d)/float64(orders), 'f', 2, 64) }
	var parts []string
	for _, m := range mysqlWork {
		var d int64
		for _, c := range m.counters {
			d += to.mysql[c] - from.mysql[c]
		}
		parts = append(parts, m.label+" "+per(d))
	}
	fmt.Fprintf(w, "  %-16s mysql per order: %s\n", "", strings.Join(parts, ", "))
	if len(to.calls) == 0 {
		return
	}
	type cmd struct {
		name        string
		calls, usec int64
	}
	var cmds []cmd
	var calls, usec int64
	for name, n := range to.calls {
		c := cmd{name, n - from.calls[name], to.usec[name] - from.usec[name]}
		if c.calls > 0 {
			cmds = append(cmds, c)
			calls, usec = calls+c.calls, usec+c.usec
		}
	}
	slices.SortFunc(cmds, func(a, b cmd) int { return int(b.calls - a.calls) })
	var top []string
	for _, c := range cmds[:min(len(cmds), 6)] {
		top = append(top, fmt.Sprintf("%s %s (%s µs)", c.name, per(c.calls), per(c.usec)))
	}
	fmt.Fprintf(w, "  %-16s redis per order: %s commands, %s µs in them; %s\n", "", per(calls), per(usec),
		strings.Join(top, ", "))
}

// profiler records CPU profiles of processes that serve net/http/pprof (SECKILL_PPROF)
// over one phase: name=base URL of each process's metrics address.
type profiler struct {
	dir     string
	targets []profileTarget
}

type profileTarget struct{ name, url string }

func parseProfiler(dir, targets string) (profiler, error) {
	p := profiler{dir: dir}
	for part := range strings.SplitSeq(targets, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, url, ok := strings.Cut(part, "=")
		if !ok || name == "" || url == "" {
			return p, fmt.Errorf("-profile-from: want name=http://host:port,..., got %q", part)
		}
		p.targets = append(p.targets, profileTarget{name, strings.TrimRight(url, "/")})
	}
	if dir != "" && len(p.targets) == 0 {
		return p, fmt.Errorf("-profile %s: -profile-from names no process", dir)
	}
	return p, nil
}

// start begins a CPU profile of d on every target; wait writes them to dir/<name>.pprof
// and says where they are.
func (p profiler) start(ctx context.Context, d time.Duration) (wait func(w io.Writer)) {
	if p.dir == "" {
		return func(io.Writer) {}
	}
	errs := make([]error, len(p.targets))
	var wg sync.WaitGroup
	for i, t := range p.targets {
		wg.Go(func() { errs[i] = p.record(ctx, t, d) })
	}
	return func(w io.Writer) {
		wg.Wait()
		for i, t := range p.targets {
			if errs[i] != nil {
				fmt.Fprintf(w, "  %-16s profile of %s: %v\n", "", t.name, errs[i])
				continue
			}
			fmt.Fprintf(w, "  %-16s profile of %s: go tool pprof -top %s\n", "", t.name,
				filepath.Join(p.dir, t.name+".pprof"))
		}
	}
}

func (p profiler) record(ctx context.Context, t profileTarget, d time.Duration) error {
	secs := max(1, int(d.Round(time.Second)/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", t.url, secs), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: d + 30*time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s (is SECKILL_PPROF=true?)", req.URL, resp.Status)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(p.dir, t.name+".pprof"))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
