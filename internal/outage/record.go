package outage

import (
	"context"
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

// spansLua is what both scripts share: the clock, and the spans of the record, parsed,
// merged and formatted.
const spansLua = `
local function clock(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function parse(s)
  local out = {}
  for a, b in string.gmatch(s or '', '(%d+):(%d+)') do out[#out + 1] = {tonumber(a), tonumber(b)} end
  return out
end
-- add puts the outage [from, to] among spans, joined with those it overlaps or comes
-- within gap of
local function add(spans, from, to, gap)
  spans[#spans + 1] = {from, math.max(from, to)}
  table.sort(spans, function(x, y) return x[1] < y[1] end)
  local out = {}
  for _, s in ipairs(spans) do
    local last = out[#out]
    if last and s[1] <= last[2] + gap then
      last[2] = math.max(last[2], s[2])
    else
      out[#out + 1] = {s[1], s[2]}
    end
  end
  return out
end
local function format(spans)
  local parts = {}
  for i, s in ipairs(spans) do parts[i] = string.format('%d:%d', s[1], s[2]) end
  return table.concat(parts, ',')
end
-- record reads the hash: its spans, and the processes that report MySQL down, each
-- {field, since, seen}
local function record(key)
  local h = redis.call('HGETALL', key)
  local spans, down = {}, {}
  for i = 1, #h, 2 do
    if h[i] == 'spans' then
      spans = parse(h[i + 1])
    elseif string.sub(h[i], 1, 2) == 'd:' then
      local since, seen = string.match(h[i + 1], '^(%d+) (%d+)$')
      down[#down + 1] = {h[i], tonumber(since), tonumber(seen)}
    end
  end
  return spans, down
end
`

// reportScript records what one process saw of MySQL.
//
// KEYS[1] the record (recordKey)
// ARGV[1] the process's instance id  ARGV[2] "down" or "up"
// ARGV[3] ms since the process last saw MySQL answer before the outage began ("" for
// none: an "up" with no outage to tell)  ARGV[4] ms since MySQL answered again ("up")
// ARGV[5] now in unix ms ("" for Redis' TIME)  ARGV[6] Lapse  ARGV[7] MergeGap
// ARGV[8] keep  ARGV[9] maxSpans, all in ms (the last one a count)
//
// "down" opens or renews the process's report (its start the earlier of the one it had
// and now - ARGV[3]); "up" ends it: the outage from its start (or now - ARGV[3], which
// makes a retried "up", or one for an outage the process could not report, the same
// outage) to now - ARGV[4] joins the spans. Reports that lapsed join the spans, ending
// where they lapsed. Spans older than keep, and beyond maxSpans, are dropped.
// Returns now.
var reportScript = redis.NewScript(spansLua + `
local now = clock(ARGV[5])
local lapse, gap, keep, most = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local spans, down = record(KEYS[1])
local mine, since = 'd:' .. ARGV[1], nil
if ARGV[3] ~= '' then since = now - tonumber(ARGV[3]) end
for _, d in ipairs(down) do
  if d[1] == mine then
    since = math.min(since or d[2], d[2])
  elseif d[3] + lapse < now then
    spans = add(spans, d[2], d[3] + lapse, gap)
    redis.call('HDEL', KEYS[1], d[1])
  end
end
if ARGV[2] == 'down' then
  redis.call('HSET', KEYS[1], mine, string.format('%d %d', since or now, now))
else
  if since then spans = add(spans, since, now - tonumber(ARGV[4]), gap) end
  redis.call('HDEL', KEYS[1], mine)
end
while #spans > 0 and (spans[1][2] < now - keep or #spans > most) do table.remove(spans, 1) end
redis.call('HSET', KEYS[1], 'spans', format(spans))
return now
`)

// readScript reads the outages.
//
// KEYS[1] the record (recordKey)
// ARGV[1] now in unix ms ("" for Redis' TIME)  ARGV[2] Lapse  ARGV[3] MergeGap (ms)
//
// Returns {now, spans, open}: the spans ("from:to,...", oldest first) are those that
// ended, joined with one per process that reports MySQL down, from its start to now (or
// to where its report lapsed); open is 1 when a report stands, and the last span then
// ends at now.
var readScript = redis.NewScript(spansLua + `
local now = clock(ARGV[1])
local lapse, gap = tonumber(ARGV[2]), tonumber(ARGV[3])
local spans, down = record(KEYS[1])
local open = 0
for _, d in ipairs(down) do
  local to = d[3] + lapse
  if to >= now then to, open = now, 1 end
  spans = add(spans, d[2], to, gap)
end
return {now, format(spans), open}
`)

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
