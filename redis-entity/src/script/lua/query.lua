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
--       order (a sorted index key or '', and asc | desc), '1' to return
--       each page member's score; then the bound of one call's work (see
--       "Paged answers" below): members per page (0: no bound), the whole
--       answer's estimate above which it is paged, and the cursor.
-- Returns: { members of the page..., the ghosts (members whose entity has
--   expired: never counted or returned; the caller removes their entries)...,
--   ghost count, total matches (ignoring offset and limit) } -- the counts
--   last, so that a whole result is returned without being copied; or
--   one page of a paged answer (see "Paged answers"). Either ends with 1
--   if an entity of the type may have expired (else 0) and how many
--   entities of the type the space holds (then '@page' for a page).
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
-- The members of `list` that `pred(member, position)` keeps.
local function keep(list, pred)
  local out = {}
  for i, m in ipairs(list) do if pred(m, i) then out[#out + 1] = m end end
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
-- Whether an entity of the type may have expired and how many entities
-- of the type this space holds (an id bucket holds at most 100), appended
-- to every reply: the caller answers a type's later queries with native
-- set commands only while nothing can have expired and it is small.
local entities = call('SCARD', universe) + 100 * call('SCARD', universe .. ':@buckets')
local function sized(out)
  out[#out + 1] = may_expire and 1 or 0
  out[#out + 1] = entities
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

-- Then the bound of one call's work: the members one page reads (0: no
-- bound, the whole answer in this call), the estimate of a whole answer's
-- work above which it goes in pages, and the cursor ('' on the first call).
local budget, whole, cursor = tonumber(arg()), tonumber(arg()), arg()
budget = math.min(budget, 4000)

-- Paged answers (docs/consistency.md, "Bounded calls"): Redis runs one call
-- at a time, so a query whose indexes hold more than `whole` members is
-- answered in calls of about `budget` members each, the caller sending the
-- cursor back until it is ''. A page walks one source (a sorted index in
-- order, the smallest condition's set, or every id), checks each member
-- against the other conditions (SMISMEMBER, ZMSCORE) and that its entity
-- lives, and returns the matches: { matches (member, and its order score
-- when ordered; none for a count)..., ghosts..., ghost count, how many
-- matches the page found, cursor, expiring, entities, '@page' } (a string
-- last, where a whole answer ends with a count). A walk meets each member
-- once (a later part of an `any` condition skips what an earlier part
-- holds), except that SSCAN returns a member twice if its set shrinks
-- during the walk: the caller removes such duplicates from the members it
-- gathers, sorts and cuts; a count adds the pages' numbers.
local function parts_of(g) return g.source == 's' and #g.keys or #g.ranges end
local function no_condition(g) return g.op == 'all' and parts_of(g) == 0 end

-- A test of one score (as ZMSCORE writes it) against ZRANGEBYSCORE bounds.
local function score_number(s)
  if s == 'inf' or s == '+inf' then return math.huge end
  if s == '-inf' then return -math.huge end
  return tonumber(s)
end
local function bound_test(min, max)
  local lo_open, hi_open = string.sub(min, 1, 1) == '(', string.sub(max, 1, 1) == '('
  local lo = score_number(lo_open and string.sub(min, 2) or min)
  local hi = score_number(hi_open and string.sub(max, 2) or max)
  return function(s)
    if not s then return false end
    local v = score_number(s)
    if lo_open then if v <= lo then return false end elseif v < lo then return false end
    if hi_open then return v < hi end
    return v <= hi
  end
end

-- Whether each of `members` is in part `p` of group `g` (sets and score
-- ranges: a prefix index is only ever the walked source).
local function part_holds(g, p, members)
  local out = {}
  if g.source == 's' then
    local r = call('SMISMEMBER', g.keys[p], unpack(members))
    for i = 1, #members do out[i] = r[i] == 1 end
  else
    local range = g.ranges[p]
    local test = bound_test(range.min, range.max)
    local r = call('ZMSCORE', range.key, unpack(members))
    for i = 1, #members do out[i] = test(r[i]) end
  end
  return out
end
local function group_holds(g, members)
  local out, every = {}, g.op == 'all'
  for i = 1, #members do out[i] = every end
  for p = 1, parts_of(g) do
    local r = part_holds(g, p, members)
    for i = 1, #members do
      if every then out[i] = out[i] and r[i] else out[i] = out[i] or r[i] end
    end
  end
  if g.op == 'none' then for i = 1, #members do out[i] = not out[i] end end
  return out
end

-- The rank of a range's first member and the range's size: a score range
-- of a sorted index, or a lexicographic one of a prefix index.
local function range_span(source, r)
  if source == 'r' then
    local first = 0
    if r.min ~= '-inf' then
      local open = string.sub(r.min, 1, 1) == '('
      local v = open and string.sub(r.min, 2) or r.min
      first = call('ZCOUNT', r.key, '-inf', open and v or ('(' .. v))
    end
    return first, call('ZCOUNT', r.key, r.min, r.max)
  end
  local first = 0
  if r.min ~= '-' then
    local open = string.sub(r.min, 1, 1) == '('
    first = call('ZLEXCOUNT', r.key, '-', (open and '[' or '(') .. string.sub(r.min, 2))
  end
  return first, call('ZLEXCOUNT', r.key, r.min, r.max)
end

-- The walked source: a condition's group `g` and its part `p` (g = 0:
-- every id, p = 1 the one set, p = 2 the buckets its directory lists).
-- Chooses the smallest positive condition; a prefix condition can only be
-- walked, never checked, so a query with one is walked by it, and one with
-- two, or one in `none`, or one of several values all required, is not
-- paged (nil).
local function choose_source()
  local lex = nil
  for gi, g in ipairs(groups) do
    if g.source == 'z' then
      if lex or g.op == 'none' or (g.op == 'all' and #g.ranges > 1) then return nil end
      lex = gi
    end
  end
  if lex then return lex, 1 end
  local best, bg, bp = nil, 0, 1
  for gi, g in ipairs(groups) do
    if g.op ~= 'none' and not no_condition(g) then
      local size, p = 0, 1
      if g.op == 'all' then
        for j = 1, parts_of(g) do
          local one = { op = 'all', source = g.source, keys = { g.keys[j] }, ranges = { g.ranges[j] } }
          local n = size_of(one)
          if j == 1 or n < size then size, p = n, j end
        end
      else
        size = size_of(g)
      end
      if best == nil or size < best then best, bg, bp = size, gi, p end
    end
  end
  return bg, bp
end

-- One page of a source from position `pos` (an SSCAN cursor, or a rank in
-- a range): its members and the next (g, p, pos), or nil when done.
local function source_page(g, p, pos)
  if g == 0 and p == 1 then
    local r = call('SSCAN', universe, pos, 'COUNT', budget)
    return r[2], 0, r[1] == '0' and 2 or 1, r[1]
  elseif g == 0 then
    -- Buckets of at most 100 ids each: a page reads about `budget` ids.
    local r = call('SSCAN', universe .. ':@buckets', pos, 'COUNT', math.max(1, math.floor(budget / 100)))
    local out = {}
    for _, b in ipairs(r[2]) do
      for _, m in ipairs(call('SMEMBERS', universe .. ':' .. b)) do out[#out + 1] = m end
    end
    if r[1] == '0' then return out, nil end
    return out, 0, 2, r[1]
  end
  local grp = groups[g]
  if parts_of(grp) == 0 then return {}, nil end
  local more = grp.op ~= 'all' and p < parts_of(grp)
  if grp.source == 's' then
    local r = call('SSCAN', grp.keys[p], pos, 'COUNT', budget)
    if r[1] ~= '0' then return r[2], g, p, r[1] end
    if more then return r[2], g, p + 1, '0' end
    return r[2], nil
  end
  local range = grp.ranges[p]
  local first, count = range_span(grp.source, range)
  local at = tonumber(pos)
  local last = math.min(at + budget, count) - 1
  local members = {}
  if at <= last then
    members = call('ZRANGE', range.key, first + at, first + last)
    if grp.source == 'z' then
      for j, entry in ipairs(members) do
        local sep = string.find(entry, ':', 1, true)
        members[j] = sep and string.sub(entry, sep + 1) or entry
      end
    end
  end
  if last + 1 < count then return members, g, p, tostring(last + 1) end
  if more then return members, g, p + 1, '0' end
  return members, nil
end

-- The members of `members` that meet every condition but the walked one's
-- own (which holds by construction, unless it needs several parts), whose
-- entity lives (ghosts go to `ghosts`), and, with `unscored`, that have no
-- score in the order's sorted index.
local function matching(members, skip, unscored, ghosts)
  local live = {}
  for i = 1, #members do live[i] = members[i] end
  for gi, g in ipairs(groups) do
    if #live == 0 then break end
    if gi ~= skip and not no_condition(g) then
      local r = group_holds(g, live)
      local kept = {}
      for i = 1, #live do if r[i] then kept[#kept + 1] = live[i] end end
      live = kept
    end
  end
  if unscored and #live > 0 then
    local r = call('ZMSCORE', order_key, unpack(live))
    local kept = {}
    for i = 1, #live do if not r[i] then kept[#kept + 1] = live[i] end end
    live = kept
  end
  if may_expire and #live > 0 then
    local kept = {}
    for _, m in ipairs(live) do
      if alive(m) then kept[#kept + 1] = m elseif #ghosts < GHOST_BUDGET then ghosts[#ghosts + 1] = m end
    end
    live = kept
  end
  return live
end

-- The group a walked source's members meet by construction.
local function own_group(g, p)
  if g == 0 then return 0 end
  local grp = groups[g]
  if grp.op == 'all' and parts_of(grp) > 1 then return 0 end
  return g
end

-- A page's reply; `counted`: how many matches it found. A count (limit
-- 0) returns no members, only that number: nothing the caller must keep.
local function page_reply(next_cursor, items, ghosts, counted)
  local out = items
  if limit == 0 then out = {} end
  for _, m in ipairs(ghosts) do out[#out + 1] = m end
  out[#out + 1] = #ghosts
  out[#out + 1] = counted
  out[#out + 1] = next_cursor
  sized(out)
  out[#out + 1] = '@page'
  return out
end

-- The walk of the order's sorted index by rank ('w:<rank>:<found>:<size>'),
-- in a score range on it if the query has one: a page of twice what is
-- still wanted, growing fourfold after a page that found less than it
-- wanted (expired entities in front), up to `budget`; when the walk ends
-- short, the matches without a score ('u:' and a source, as 'd:') follow,
-- unless a range excludes them.
local function walk_page(at, found, size)
  local min, max, ranged = '-inf', '+inf', false
  for _, g in ipairs(groups) do
    if g.source == 'r' and g.op == 'all' then
      ranged = true
      if g.ranges[1].key == order_key then min, max = g.ranges[1].min, g.ranges[1].max end
    end
  end
  local desc_order = order_dir == 'desc'
  local first, total
  if desc_order then
    total = call('ZCOUNT', order_key, min, max)
    first = 0
    if max ~= '+inf' then
      local open = string.sub(max, 1, 1) == '('
      local v = open and string.sub(max, 2) or max
      first = call('ZCOUNT', order_key, open and v or ('(' .. v), '+inf')
    end
  else
    first, total = range_span('r', { key = order_key, min = min, max = max })
  end
  local want = offset + limit - found
  local n = math.min(budget, math.max(16, 2 * want, size))
  local last = math.min(at + n, total) - 1
  local ghosts, items = {}, {}
  if at <= last then
    local cmd = { 'ZRANGE', order_key, first + at, first + last }
    if desc_order then cmd[#cmd + 1] = 'REV' end
    local members = call(unpack(cmd))
    local live = matching(members, 0, false, ghosts)
    local got = #live > 0 and call('ZMSCORE', order_key, unpack(live)) or {}
    for i, m in ipairs(live) do items[#items + 1] = m; items[#items + 1] = got[i] or 'nan' end
  end
  local got = #items / 2
  found = found + got
  if last + 1 < total and found < offset + limit then
    local next_size = got < want and math.min(budget, n * 4) or n
    return page_reply('w:' .. (last + 1) .. ':' .. found .. ':' .. next_size, items, ghosts, got)
  end
  if ranged or found >= offset + limit then return page_reply('', items, ghosts, got) end
  local g, p = choose_source()
  return page_reply('u:' .. g .. ':' .. p .. ':0', items, ghosts, got)
end

local function paged(c)
  local kind, rest = string.sub(c, 1, 1), string.sub(c, 3)
  if kind == 'w' then
    local at, found, size = string.match(rest, '^(%d+):(%d+):(%d+)$')
    return walk_page(tonumber(at), tonumber(found), tonumber(size))
  end
  local g, p, pos = string.match(rest, '^(%d+):(%d+):(.*)$')
  g, p = tonumber(g), tonumber(p)
  local members, ng, np, npos = source_page(g, p, pos)
  local ghosts, items = {}, {}
  -- A later part of an `any` condition: the members an earlier part holds
  -- were met there (so a count counts each once).
  local grp = groups[g]
  if grp and grp.op == 'any' and p > 1 and #members > 0 then
    for q = 1, p - 1 do
      local held = part_holds(grp, q, members)
      members = keep(members, function(_, i) return not held[i] end)
      if #members == 0 then break end
    end
  end
  local live = matching(members, own_group(g, p), kind == 'u', ghosts)
  if order_key ~= '' and kind == 'd' and #live > 0 then
    local got = call('ZMSCORE', order_key, unpack(live))
    for i, m in ipairs(live) do items[#items + 1] = m; items[#items + 1] = got[i] or 'nan' end
  elseif order_key ~= '' then
    for _, m in ipairs(live) do items[#items + 1] = m; items[#items + 1] = 'nan' end
  else
    items = live
  end
  local next_cursor = ''
  if ng then next_cursor = kind .. ':' .. ng .. ':' .. np .. ':' .. npos end
  return page_reply(next_cursor, items, ghosts, #live)
end

-- A query whose whole answer would read more than `whole` members goes in
-- pages (above); the estimate is the members of every condition (every id
-- when none narrows it), which bounds every whole-answer path below.
-- The work of a whole answer that is one intersection of sets
-- (`all(field, [a, b, ..])` alone): SINTER reads the smallest set once and
-- looks each member up in the others, so its work is the smallest set's
-- size times the sets, however big the others are. nil for other shapes.
local function intersection_work()
  local g = groups[1]
  if #groups ~= 1 or g.op ~= 'all' or g.source ~= 's' or #g.keys < 2 then return nil end
  local smallest
  for _, key in ipairs(g.keys) do
    local n = call('SCARD', key)
    if smallest == nil or n < smallest then smallest = n end
  end
  return smallest * #g.keys
end

if budget > 0 and cursor == '' then
  local est, positive, lex = 0, false, false
  for _, g in ipairs(groups) do
    if g.op ~= 'none' and not no_condition(g) then positive = true end
    if g.source == 'z' then lex = true end
    if est <= whole then est = est + size_of(g) end
  end
  if not positive and est <= whole then
    est = est + entities
  end
  if est > whole then est = intersection_work() or est end
  if est > whole then
    -- A count of one set or range, nothing expiring: its size, at once.
    if limit == 0 and #groups == 1 and not may_expire and parts_of(groups[1]) == 1
      and groups[1].op ~= 'none' then
      return sized({ 0, size_of(groups[1]) })
    end
    if order_key ~= '' and limit > 0 and not lex then
      cursor = 'w:0:0:0'
    else
      local g, p = choose_source()
      if g then cursor = 'd:' .. g .. ':' .. p .. ':0' end
    end
  end
end
if cursor ~= '' then return paged(cursor) end

-- Fast path for leaderboards: ordered by a sorted index, at most a range on
-- that same index, nothing that can have expired: one ZRANGE with LIMIT.
-- (A count without the range counts every entity: an order does not
-- filter, entities without a score come last.)
if order_key ~= '' and not may_expire and #groups <= 1
  and (budget == 0 or (limit >= 0 and offset + limit <= whole))
  and (limit ~= 0 or #groups == 1)
  and (#groups == 0 or (groups[1].source == 'r' and groups[1].ranges[1].key == order_key)) then
  local min, max = '-inf', '+inf'
  if #groups == 1 then min = groups[1].ranges[1].min; max = groups[1].ranges[1].max end
  local total = call('ZCOUNT', order_key, min, max)
  if limit == 0 then return sized({ 0, total }) end
  local cmd = { 'ZRANGE', order_key, min, max, 'BYSCORE' }
  if order_dir == 'desc' then cmd = { 'ZRANGE', order_key, max, min, 'BYSCORE', 'REV' } end
  if limit > 0 or offset > 0 then
    cmd[#cmd + 1] = 'LIMIT'; cmd[#cmd + 1] = offset; cmd[#cmd + 1] = limit
  end
  if with_scores then cmd[#cmd + 1] = 'WITHSCORES' end
  local out = call(unpack(cmd))
  out[#out + 1] = 0; out[#out + 1] = total
  return sized(out)
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
  return sized(out)
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
  return sized(page)
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
