#!lua flags=no-writes
-- redis-entity: the member ids matching a query over indexes, in one call.
--
-- KEYS: the index keys of every condition, group after group, then the set
--       of all members of the entity type (the universe of a query that has
--       only `none` conditions).
-- ARGV: group count; per group: operation (all | any | none), source (s = sets
--       of members, z = lexicographic ranges of a prefix index's sorted set,
--       whose entries are `escaped value:member`, r = score ranges of a sorted
--       index), part count, and for z and r parts a min and a max per part
--       (ZRANGEBYLEX / ZRANGEBYSCORE syntax);
--       then the sort mode (n = numeric members, s = text, - = unsorted: the
--       caller sorts a full result itself), offset, limit (-1: no limit;
--       0: only count); then the expiry set of the type, the owner head and
--       a count of presence suffixes and the suffixes (head..member..suffix
--       are the keys whose existence means the entity exists); then the
--       order (a sorted index key or '', and asc | desc) and '1' to return
--       each page member's score.
-- Returns: { members of the page..., the ghosts (members whose entity has
--   expired: never counted or returned; the caller removes their entries)...,
--   ghost count, total matches (ignoring offset and limit) } -- the counts
--   last, so that a whole result is returned without being copied.
-- Nothing is written: no temporary keys, so nothing can outlive the query.
local a = 0
local function arg() a = a + 1; return ARGV[a] end
local k = 0
local function next_key() k = k + 1; return KEYS[k] end

local function to_set(list)
  local s = {}
  for _, m in ipairs(list) do s[m] = true end
  return s
end
local function keep(list, pred)
  local out = {}
  for _, m in ipairs(list) do if pred(m) then out[#out + 1] = m end end
  return out
end

-- The members of one lexicographic range of a prefix index.
local function lex_members(key, min, max)
  local out = {}
  for _, entry in ipairs(call('ZRANGEBYLEX', key, min, max)) do
    local sep = string.find(entry, ':', 1, true)
    if sep then out[#out + 1] = string.sub(entry, sep + 1) end
  end
  return out
end

-- Each group: its parts (set keys, or ranges of a sorted set), read only
-- when needed.
local groups = {}
for g = 1, tonumber(arg()) do
  local op, source, n = arg(), arg(), tonumber(arg())
  local group = { op = op, source = source, keys = {}, ranges = {}, size = 0 }
  for j = 1, n do
    local key = next_key()
    if source == 's' then
      group.keys[j] = key
    else
      group.ranges[j] = { key = key, min = arg(), max = arg() }
    end
  end
  groups[#groups + 1] = group
end

-- The members of one part of a range group.
local function range_members(source, r)
  if source == 'r' then return call('ZRANGEBYSCORE', r.key, r.min, r.max) end
  return lex_members(r.key, r.min, r.max)
end

-- An estimate of a group's size, to intersect the smallest first.
local function size_of(group)
  local n = 0
  for _, key in ipairs(group.keys) do n = n + call('SCARD', key) end
  for _, r in ipairs(group.ranges) do
    if group.source == 'r' then n = n + call('ZCOUNT', r.key, r.min, r.max)
    else n = n + call('ZLEXCOUNT', r.key, r.min, r.max) end
  end
  return n
end
local universe = next_key()
local sort_mode, offset, limit = arg(), tonumber(arg()), tonumber(arg())
local expiry_key, owner_head = arg(), arg()
local suffixes = {}
for j = 1, tonumber(arg()) do suffixes[j] = arg() end
local order_key, order_dir, with_scores = arg(), arg(), arg() == '1'
local may_expire = expiry_key ~= '' and call('ZCARD', expiry_key) > 0

-- Fast path for leaderboards: ordered by a sorted index, at most a range on
-- that same index, nothing that can have expired: one ZRANGE with LIMIT.
if order_key ~= '' and not may_expire and #groups <= 1
  and (#groups == 0 or (groups[1].source == 'r' and groups[1].ranges[1].key == order_key)) then
  local min, max = '-inf', '+inf'
  if #groups == 1 then min = groups[1].ranges[1].min; max = groups[1].ranges[1].max end
  local total = call('ZCOUNT', order_key, min, max)
  if limit == 0 then return { 0, total } end
  local cmd = { 'ZRANGE', order_key, min, max, 'BYSCORE' }
  if order_dir == 'desc' then cmd = { 'ZRANGE', order_key, max, min, 'BYSCORE', 'REV' } end
  if limit > 0 or offset > 0 then
    cmd[#cmd + 1] = 'LIMIT'; cmd[#cmd + 1] = offset; cmd[#cmd + 1] = limit
  end
  if with_scores then cmd[#cmd + 1] = 'WITHSCORES' end
  local out = call(unpack(cmd))
  out[#out + 1] = 0; out[#out + 1] = total
  return out
end

-- Whether the entity of member `m` still exists.
local function alive(m)
  for j = 1, #suffixes do
    if call('EXISTS', owner_head .. m .. suffixes[j]) == 1 then return true end
  end
  return false
end

-- Ghosts (expired entities met on the way) are skipped in the answer; at
-- most GHOST_BUDGET of them are reported per call for the caller to clean,
-- so a read's cleanup stays small however many have expired (`sweep` and
-- later reads take the rest).
local GHOST_BUDGET = 100
local function ghost(list, m)
  if #list < GHOST_BUDGET then list[#list + 1] = m end
end

-- Ordered pages (leaderboards) when entities may have expired: walk the
-- sorted index in order, a chunk at a time, until the page is full. A
-- member whose expiry time has passed (one ZMSCORE per chunk) is a ghost
-- without further look; the others are checked to exist. The work is the
-- page plus the ghosts in front of it, never the whole index: the walk goes
-- by rank (ZRANGE by index costs the chunk, where BYSCORE with LIMIT would
-- skip the offset again on every chunk, quadratic in the ghosts), and the
-- chunk doubles while it finds nothing, so a long run of ghosts costs few
-- calls.
if order_key ~= '' and may_expire and limit > 0 and #groups <= 1
  and (#groups == 0 or (groups[1].source == 'r' and groups[1].ranges[1].key == order_key)) then
  local min, max = '-inf', '+inf'
  if #groups == 1 then min = groups[1].ranges[1].min; max = groups[1].ranges[1].max end
  local t = call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local total = call('ZCOUNT', order_key, min, max)
  local desc_order = order_dir == 'desc'
  -- The rank of the range's first member in walk order: the members before
  -- it (below min ascending, above max descending).
  local function before(bound, low)
    if bound == '-inf' or bound == '+inf' then return 0 end
    local open = string.sub(bound, 1, 1) == '('
    local v = open and string.sub(bound, 2) or bound
    if low then return call('ZCOUNT', order_key, '-inf', open and v or ('(' .. v)) end
    return call('ZCOUNT', order_key, open and v or ('(' .. v), '+inf')
  end
  local first = desc_order and before(max, false) or before(min, true)
  local found, n, walk_ghosts, start, chunk = {}, 0, {}, 0, 256
  -- The members whose expiry time has passed, once read (see below).
  local expired, EXPIRED_SET_MAX = nil, 200000
  local want = offset + limit
  while n < want and start < total do
    local last = first + math.min(start + chunk, total) - 1
    local cmd = { 'ZRANGE', order_key, first + start, last }
    if desc_order then cmd[5] = 'REV' end
    -- Members only: most of a long walk is ghosts, whose scores nobody reads.
    local members = call(unpack(cmd))
    if #members == 0 then break end
    local past = {}
    if expired then
      for j, m in ipairs(members) do past[j] = expired[m] end
    else
      local expires = call('ZMSCORE', expiry_key, unpack(members))
      for j = 1, #members do
        local at = expires[j] and tonumber(expires[j])
        past[j] = at and at <= now
      end
    end
    local had, met = n, 0
    for j, m in ipairs(members) do
      if n < want and not past[j] and alive(m) then
        n = n + 1
        found[#found + 1] = m; found[#found + 1] = false
      elseif n < want then
        ghost(walk_ghosts, m)
        met = met + 1
      end
    end
    start = start + #members
    if n == had and chunk < 4096 then chunk = chunk * 2 end
    -- A walk through mostly ghosts: ZMSCORE costs about 0.3 µs a member
    -- (it formats every score), a lookup in the set of every member whose
    -- expiry time has passed, read once by score, a tenth of that. Read it
    -- once unless it is too large to be worth it.
    if not expired and n < want and met * 2 >= #members
      and call('ZCOUNT', expiry_key, '-inf', now) <= EXPIRED_SET_MAX then
      expired = {}
      for _, m in ipairs(call('ZRANGE', expiry_key, '-inf', now, 'BYSCORE')) do expired[m] = true end
    end
  end
  if with_scores and #found > 0 then
    local page = {}
    for j = 1, #found, 2 do page[#page + 1] = found[j] end
    local got = call('ZMSCORE', order_key, unpack(page))
    for j = 1, #page do found[2 * j] = got[j] end
  end
  local out = {}
  for j = 2 * offset + 1, #found, 2 do
    out[#out + 1] = found[j]
    if with_scores then out[#out + 1] = found[j + 1] end
  end
  for _, g in ipairs(walk_ghosts) do out[#out + 1] = g end
  -- The total counts every indexed entry of the range (exact counts: count()).
  out[#out + 1] = #walk_ghosts
  out[#out + 1] = total
  return out
end

-- The members of a group combined as its operation says: all = intersection,
-- any / none = union (none is subtracted afterwards).
local function members_of(group)
  if group.source == 's' then
    if #group.keys == 0 then return {} end
    if group.op == 'all' then return call('SINTER', unpack(group.keys)) end
    return call('SUNION', unpack(group.keys))
  end
  local lists = {}
  for j, r in ipairs(group.ranges) do lists[j] = range_members(group.source, r) end
  if #lists == 0 then return {} end
  if group.op == 'all' then
    local result = lists[1]
    for j = 2, #lists do
      local s = to_set(lists[j])
      result = keep(result, function(m) return s[m] end)
    end
    return result
  end
  local seen, out = {}, {}
  for _, list in ipairs(lists) do
    for _, m in ipairs(list) do
      if not seen[m] then seen[m] = true; out[#out + 1] = m end
    end
  end
  return out
end

-- Positive groups are intersected smallest first (SINTER also orders its
-- own inputs by size); an empty intersection stops early.
local positive, negative = {}, {}
for _, g in ipairs(groups) do
  if g.op == 'none' then negative[#negative + 1] = g else positive[#positive + 1] = g end
end
if #positive > 1 then
  for _, g in ipairs(positive) do g.size = size_of(g) end
  table.sort(positive, function(x, y) return x.size < y.size end)
end
local result
-- One set minus sets (`eq(x).none([y, ..])`): SDIFF, natively.
local function single_key(g)
  return g.source == 's' and #g.keys == 1 and g.keys[1]
end
if result == nil and #positive == 1 and #negative > 0 and single_key(positive[1]) then
  local keys, native = { single_key(positive[1]) }, true
  for _, g in ipairs(negative) do
    if g.source ~= 's' then native = false; break end
    for _, k in ipairs(g.keys) do keys[#keys + 1] = k end
  end
  if native then
    result = call('SDIFF', unpack(keys))
    positive, negative = {}, {}
  end
end
for _, g in ipairs(positive) do
  if result and #result == 0 then break end
  -- `all` of no values is no condition; `any` of no values matches nothing.
  if not (g.op == 'all' and #g.keys == 0 and #g.ranges == 0) then
    local members = members_of(g)
    if result == nil then
      result = members
    else
      local s = to_set(members)
      result = keep(result, function(m) return s[m] end)
    end
  end
end
-- Every id of the type (`keyspace::bucketed_ids`): the buckets its directory
-- lists, and the one set (of a type without buckets, or written before them).
local function all_ids()
  local out = call('SMEMBERS', universe)
  local seen = #out > 0 and to_set(out)
  for _, b in ipairs(call('SMEMBERS', universe .. ':@buckets')) do
    for _, m in ipairs(call('SMEMBERS', universe .. ':' .. b)) do
      if not (seen and seen[m]) then out[#out + 1] = m end
    end
  end
  return out
end
if result == nil then result = all_ids() end
for _, g in ipairs(negative) do
  if #result == 0 then break end
  local excluded = to_set(members_of(g))
  result = keep(result, function(m) return not excluded[m] end)
end

-- Entities with a TTL may have expired since they were indexed; only when
-- some entity of the type has one is each candidate checked.
local ghosts = {}
if may_expire and #result > 0 then
  local live = {}
  for _, m in ipairs(result) do
    if alive(m) then live[#live + 1] = m else ghost(ghosts, m) end
  end
  result = live
end
local total = #result
local function reply(page)
  for _, g in ipairs(ghosts) do page[#page + 1] = g end
  page[#page + 1] = #ghosts
  page[#page + 1] = total
  return page
end

if limit == 0 then return reply({}) end
-- Ordering by a sorted index: Redis' order (score, then member bytes;
-- both reversed for desc), members without a score last.
local scores = {}
if order_key ~= '' then
  for s = 1, #result, 4000 do
    local chunk = {}
    for j = s, math.min(s + 3999, #result) do chunk[#chunk + 1] = result[j] end
    local got = call('ZMSCORE', order_key, unpack(chunk))
    for j, m in ipairs(chunk) do scores[m] = got[j] and tonumber(got[j]) or nil end
  end
  local desc = order_dir == 'desc'
  table.sort(result, function(x, y)
    local sx, sy = scores[x], scores[y]
    if sx == nil or sy == nil then
      if sx == sy then return x < y end
      return sy == nil
    end
    if sx ~= sy then
      if desc then return sx > sy end
      return sx < sy
    end
    if desc then return x > y end
    return x < y
  end)
end

if sort_mode == '-' then
  return reply(result)
elseif sort_mode == 'o' then
  -- already ordered
elseif sort_mode == 'n' then
  table.sort(result, function(x, y)
    local nx, ny = tonumber(x) or 0, tonumber(y) or 0
    if nx ~= ny then return nx < ny end
    return x < y
  end)
else
  table.sort(result)
end

local page = {}
local last = #result
if limit >= 0 then last = math.min(#result, offset + limit) end
for j = offset + 1, last do
  page[#page + 1] = result[j]
  if with_scores then page[#page + 1] = tostring(scores[result[j]] or 'nan') end
end
return reply(page)
