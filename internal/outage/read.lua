-- Reads the outages. Record.Read runs it (record.go).
--
--   KEYS[1] record: the record (recordKey)
--   ARGV[1] now: unix ms ("" for Redis' TIME)  ARGV[2] lapse: Lapse  ARGV[3] gap: MergeGap (ms)
--
-- Returns {now, spans, open}: the spans ("from:to,...", oldest first) are those that ended,
-- joined with one per process that reports MySQL down, from its start to now (or to where
-- its report lapsed); open is 1 when a report stands, and the last span then ends at now.

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
local ARG = {now = ARGV[1], lapse = tonumber(ARGV[2]), gap = tonumber(ARGV[3])}

local now = clock(ARG.now)
local lapse, gap = ARG.lapse, ARG.gap
local spans, down = record(K.record)
local open = 0
for _, d in ipairs(down) do
  local to = d[3] + lapse
  if to >= now then to, open = now, 1 end
  spans = add(spans, d[2], to, gap)
end
return {now, format(spans), open}
