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
// counters, the same counters of this tool's own connection (its reads, to be left
// out), and Redis's calls and time per command (summed over the nodes given).
type workSample struct {
	mysql map[string]int64
	own   map[string]int64 // SHOW SESSION STATUS of the tool's connection
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

// sample reads the counters; own is the connection through which this tool reads MySQL
// meanwhile (its counters are left out of the service's work), nil for none.
func (w workWatch) sample(ctx context.Context, own *sql.Conn) (workSample, error) {
	s := workSample{calls: map[string]int64{}, usec: map[string]int64{}}
	if w.db == nil { // nothing to read: printWork prints nothing
		return s, nil
	}
	var err error
	if s.mysql, err = mysqlStatus(ctx, w.db, "SHOW GLOBAL STATUS"); err != nil {
		return s, err
	}
	if own != nil {
		if s.own, err = mysqlStatus(ctx, own, "SHOW SESSION STATUS"); err != nil {
			return s, err
		}
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

// mysqlStatus reads the counters of a SHOW STATUS statement.
func mysqlStatus(ctx context.Context, db querier, show string) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, show)
	if err != nil {
		return nil, fmt.Errorf("mysql status: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("mysql status: %w", err)
		}
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			out[name] = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mysql status: %w", err)
	}
	return out, nil
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
// costs MySQL, as printed. All but the fsyncs are counted per connection too, so the
// tool's own reads are taken out of them; the fsyncs are the server's alone (a
// session's SHOW STATUS shows the global figure of such a counter). Statements are
// Questions, those the clients sent (Queries has no per-connection figure in MariaDB).
var mysqlWork = []struct {
	label    string
	counters []string
	global   bool // no per-connection figure: nothing taken out
}{
	{"rows read", []string{"Rows_read"}, false},
	{"written", []string{"Handler_write"}, false},
	{"updated", []string{"Handler_update"}, false},
	{"deleted", []string{"Handler_delete"}, false},
	{"index reads", []string{"Handler_read_first", "Handler_read_key", "Handler_read_last",
		"Handler_read_next", "Handler_read_prev", "Handler_read_rnd", "Handler_read_rnd_next"}, false},
	{"statements", []string{"Questions"}, false},
	{"commits", []string{"Com_commit"}, false},
	{"fsyncs", []string{"Innodb_data_fsyncs"}, true},
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
			if !m.global {
				d -= to.own[c] - from.own[c]
			}
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
	var scripts cmd // EVAL, EVALSHA, FCALL: their time includes their commands'
	for name, n := range to.calls {
		c := cmd{name, n - from.calls[name], to.usec[name] - from.usec[name]}
		switch {
		case c.calls <= 0:
		case isScriptCall(name):
			scripts.calls, scripts.usec = scripts.calls+c.calls, scripts.usec+c.usec
		default:
			cmds = append(cmds, c)
		}
	}
	slices.SortFunc(cmds, func(a, b cmd) int { return int(b.calls - a.calls) })
	var top []string
	for _, c := range cmds[:min(len(cmds), 6)] {
		top = append(top, fmt.Sprintf("%s %s (%s µs)", c.name, per(c.calls), per(c.usec)))
	}
	fmt.Fprintf(w, "  %-16s redis per order: %s script calls, %s µs in them (their commands' time included); "+
		"commands, in scripts or not: %s\n", "", per(scripts.calls), per(scripts.usec), strings.Join(top, ", "))
}

// isScriptCall tells the commands that run a script (Redis counts a script's commands
// both on their own and in the script's time).
func isScriptCall(name string) bool {
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
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
