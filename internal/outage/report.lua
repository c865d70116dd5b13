-- Records what one process saw of MySQL. Record.Report runs it (record.go).
--
--   KEYS[1] record: the record (recordKey)
--   ARGV[1] id: the process's instance id  ARGV[2] state: "down" or "up"
--   ARGV[3] last_seen: ms since the process last saw MySQL answer before the outage began
--     ("" for none: an "up" with no outage to tell)
--   ARGV[4] back: ms since MySQL answered again ("up")
--   ARGV[5] now: unix ms ("" for Redis' TIME)  ARGV[6] lapse: Lapse  ARGV[7] gap: MergeGap
--   ARGV[8] keep  ARGV[9] most: maxSpans, all in ms (the last one a count)
--
-- "down" opens or renews the process's report (its start the earlier of the one it had
-- and now - last_seen); "up" ends it: the outage from its start (or now - last_seen, which
-- makes a retried "up", or one for an outage the process could not report, the same
-- outage) to now - back joins the spans. Reports that lapsed join the spans, ending where
-- they lapsed. Spans older than keep, and beyond most, are dropped.
--
-- Returns now.

---- begin spans.lua: a copy; edit spans.lua, then run go generate
-- What the outage record's scripts share (record.go): the clock, and the spans of the
-- record, parsed, merged and formatted.
--
--   clock(arg): arg as unix ms, or Redis' clock for ""
--   parse(s): the spans of "from:to,..." as {{from, to}, ...}
--   add(spans, from, to, gap): spans with the outage [from, to] among them (below)
--   format(spans): "from:to,..."
--   record(key): the record's spans, and the processes that report MySQL down, each
--     {field, since, seen}
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
---- end spans.lua

local K = {record = KEYS[1]}
local ARG = {id = ARGV[1], state = ARGV[2], last_seen = ARGV[3], back = ARGV[4], now = ARGV[5],
  lapse = tonumber(ARGV[6]), gap = tonumber(ARGV[7]), keep = tonumber(ARGV[8]), most = tonumber(ARGV[9])}

local now = clock(ARG.now)
local lapse, gap, keep, most = ARG.lapse, ARG.gap, ARG.keep, ARG.most
local spans, down = record(K.record)
local mine, since = 'd:' .. ARG.id, nil
if ARG.last_seen ~= '' then since = now - tonumber(ARG.last_seen) end
for _, d in ipairs(down) do
  if d[1] == mine then
    since = math.min(since or d[2], d[2])
  elseif d[3] + lapse < now then
    spans = add(spans, d[2], d[3] + lapse, gap)
    redis.call('HDEL', K.record, d[1])
  end
end
if ARG.state == 'down' then
  redis.call('HSET', K.record, mine, string.format('%d %d', since or now, now))
else
  if since then spans = add(spans, since, now - tonumber(ARG.back), gap) end
  redis.call('HDEL', K.record, mine)
end
while #spans > 0 and (spans[1][2] < now - keep or #spans > most) do table.remove(spans, 1) end
redis.call('HSET', K.record, 'spans', format(spans))
return now
