package outage

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// recordKey is the one record of MySQL's outages that every process shares: a hash with
// the field spans, the outages that ended ("from:to,..." in unix ms, oldest first, none
// within MergeGap of another), and a field d:<instance> = "<since> <seen>" for each
// process that reports MySQL down: since when it has not seen MySQL answer, and when it
// last said so. Its own hash tag puts it in one slot of a Redis Cluster.
const recordKey = "seckill:{outage}:mysql"

const (
	// Lapse is how long a process's report that MySQL is down stands without being
	// renewed (a Monitor renews it at every probe): a process that dies mid-outage
	// stops holding the outage open this long after its last report.
	Lapse = 5 * time.Second
	// MergeGap joins outages: two less than this apart count as one, so a flapping
	// link is one outage, gaps included.
	MergeGap = 3 * time.Second
	// keep is how long an outage that ended is kept: past the longest window (a group's
	// week) plus MaxGrace, no window can overlap it.
	keep = 8 * 24 * time.Hour
	// maxSpans bounds the record: beyond it the oldest outages are forgotten.
	maxSpans = 1000
)

// reportScript records what one process saw of MySQL (report.lua).
//
//go:embed report.lua
var reportLua string
var reportScript = redis.NewScript(reportLua)

// readScript reads the outages (read.lua).
//
//go:embed read.lua
var readLua string
var readScript = redis.NewScript(readLua)

// Record is the record of MySQL's outages in Redis.
type Record struct {
	rdb redis.Scripter
	now func() time.Time
}

// NewRecord returns the record on rdb, on Redis' clock.
func NewRecord(rdb redis.Scripter) *Record { return &Record{rdb: rdb} }

// SetClock replaces Redis' clock with now (tests).
func (r *Record) SetClock(now func() time.Time) { r.now = now }

// clock is ARGV's now: "" for Redis' TIME.
func (r *Record) clock() string {
	if r.now == nil {
		return ""
	}
	return strconv.FormatInt(r.now().UnixMilli(), 10)
}

// Report is what a process saw of MySQL.
type Report struct {
	// Instance names the process.
	Instance string
	// Down is true while MySQL does not answer it.
	Down bool
	// Since is how long ago the process last saw MySQL answer before the outage
	// began; 0 with Down false when there is no outage to tell.
	Since time.Duration
	// Back is, with Down false, how long ago MySQL answered again.
	Back time.Duration
}

// Report records what a process saw: an outage it sees (renewed at each report, which
// stands for Lapse), or the end of one.
func (r *Record) Report(ctx context.Context, rep Report) error {
	state, since := "up", ""
	if rep.Down {
		state = "down"
	}
	if rep.Down || rep.Since > 0 {
		since = strconv.FormatInt(rep.Since.Milliseconds(), 10)
	}
	err := reportScript.Run(ctx, r.rdb, []string{recordKey}, rep.Instance, state, since, rep.Back.Milliseconds(),
		r.clock(), Lapse.Milliseconds(), MergeGap.Milliseconds(), keep.Milliseconds(), maxSpans).Err()
	if err != nil {
		return fmt.Errorf("report MySQL %s: %w", state, err)
	}
	return nil
}

// Read returns the outages as the record holds them now.
func (r *Record) Read(ctx context.Context) (Outages, error) {
	v, err := readScript.Run(ctx, r.rdb, []string{recordKey}, r.clock(), Lapse.Milliseconds(), MergeGap.Milliseconds()).Slice()
	if err != nil {
		return Outages{}, fmt.Errorf("read MySQL outages: %w", err)
	}
	if len(v) != 3 {
		return Outages{}, fmt.Errorf("read MySQL outages: unexpected reply %v", v)
	}
	spans, ok1 := v[1].(string)
	open, ok2 := v[2].(int64)
	if !ok1 || !ok2 {
		return Outages{}, fmt.Errorf("read MySQL outages: unexpected reply %v", v)
	}
	o := Outages{Open: open == 1}
	if o.Spans, err = parseSpans(spans); err != nil {
		return Outages{}, fmt.Errorf("read MySQL outages: %w", err)
	}
	return o, nil
}

// parseSpans reads "from:to,..." (unix ms).
func parseSpans(s string) ([]Span, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]Span, len(parts))
	for i, p := range parts {
		a, b, ok := strings.Cut(p, ":")
		from, err1 := strconv.ParseInt(a, 10, 64)
		to, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("malformed span %q", p)
		}
		out[i] = Span{From: time.UnixMilli(from).UTC(), To: time.UnixMilli(to).UTC()}
	}
	return out, nil
}
