-- redis-entity: what every write script of an entity type shares.
--
-- The library of an entity type (a Redis function library, loaded once
-- per server) is the type header the runtime generates (`T`: the roles of
-- the entity's keys, its index descriptions and key prefixes, all taken
-- from the runtime's keyspace module, and `ESCAPED`, the escape alphabet),
-- this prelude, the body of each operation (save, update, delete, ...) and
-- their registration. Nothing here spells a key name: keys come in `keys`,
-- key prefixes in T, the namespace in the arguments.
--
-- Per entity, keys: the entity's keys in the order of T.roles (base, then
-- strings-layout columns, then #[hash] maps, then the index shadow).
-- Arguments: request token ('' for none, see `once`), namespace, member, ttl
-- ms to set (-1: keep the remaining TTL, 0: remove it),
-- compare-and-set document (''), expected version ('' = no check), one
-- value per index of T.idx ('' = not known: read it after the write; u =
-- unchanged by this write; n = None; v.. = the stored form this write gives
-- the field, or the escaped value of an indexed pk field), then the
-- operation's own arguments.

-- The state of one entity's write is one context table, `w`, made by
-- `begin` for each entity and passed to every function that needs it: a
-- library's module-level variables outlive the call (and a batch runs many
-- entities in one call), so nothing of one entity's write can leak into the
-- next. Its fields:
--   K, A, a      this entity's keys and arguments, the last argument read
--   ns, member, ttl, cas, version_expected   the common arguments
--   pre[n]       per index: the namespaced key prefix
--   new[n]       per index: the entries this write gives (false: read after
--                the write)
--   given[n]     whether index n's value came with the call (then its unique
--                check is done first)
--   keep[n]      the client holds no claim on a new unique value yet ('w',
--                'm'): see claims_needed
--   old[n]       the entries the stored values (or the shadow) hold
--   ids_key, expiry_key, owner_head, rel_key, shadow   keys of this entity
--   existed, old_pttl, ghost   whether it is stored, its TTL, and whether it
--                expired leaving a shadow
--   conds[j]     the conditions the write requires of the stored values
--   unchanged    how many indexes the write leaves untouched ('u')
local function arg(w) w.a = w.a + 1; return w.A[w.a] end
local NONE = {}           -- no entries (never modified)
local UNCHANGED = {}      -- marks an index this write does not touch

local function role(i) return string.sub(T.roles, i, i) end

-- Old values of the listed indexes' columns, read in one call per key kind.
local function read_values(w, list)
  local out = {}
  local fields, fields_at, columns, columns_at = {}, {}, {}, {}
  for _, n in ipairs(list) do
    local spec = T.idx[n]
    if not spec.pk then
      if spec.field == '' then
        columns[#columns + 1] = w.K[spec.k]; columns_at[#columns_at + 1] = n
      else
        fields[#fields + 1] = spec.field; fields_at[#fields_at + 1] = n
      end
    end
  end
  if #fields > 0 then
    local vs = redis.call('HMGET', w.K[1], unpack(fields))
    for j, n in ipairs(fields_at) do out[n] = vs[j] or nil end
  end
  if #columns > 0 then
    local vs = redis.call('MGET', unpack(columns))
    for j, n in ipairs(columns_at) do out[n] = vs[j] or nil end
  end
  return out
end

-- The index entries of a stored value: escaped scalars, or a tag list that
-- is stored already escaped and joined by ':'.
local function entries(kind, raw)
  local out = {}
  if not raw then return out end
  if kind == 't' then
    for t in string.gmatch(raw, '[^:]+') do out[t] = true end
  elseif kind == 's' then
    out[raw] = true
  else
    out[esc(raw)] = true
  end
  return out
end

local function owner_alive(w, owner)
  for s = 1, #T.suffixes do
    if redis.call('EXISTS', w.owner_head .. owner .. T.suffixes[s]) == 1 then return true end
  end
  return false
end

-- The entries of an entity that expired: its shadow. Joined by ':', which
-- no escaped entry contains. A shadow of another type reads as empty here:
-- `check_key_types` then refuses the write, naming it.
local function shadow_entries(w)
  local out = {}
  local stored = {}
  local flat = w.shadow and redis.pcall('HGETALL', w.shadow) or {}
  if not flat.err then
    for j = 1, #flat, 2 do stored[tonumber(flat[j])] = flat[j + 1] end
  end
  for n = 1, #T.idx do
    out[n] = {}
    if stored[n] then
      for e in string.gmatch(stored[n], '[^:]+') do out[n][e] = true end
    end
  end
  return out
end

-- A new bucket joins the directory; a repair (`force`) lists it again, in
-- case the directory lost it.
local function ids_add(w, force)
  local added = redis.call('SADD', w.ids_in, w.member)
  if w.ids_in ~= w.ids_key and (force or (added == 1 and redis.call('SCARD', w.ids_in) == 1)) then
    redis.call('SADD', ids_directory(w.ids_key), string.sub(w.ids_in, #w.ids_key + 2))
  end
  return added
end

-- Removes the member from its bucket (an emptied bucket leaves the
-- directory) and from the one set a store written before buckets keeps (read
-- beside them, never added to again).
local function ids_remove(w)
  local removed = redis.call('SREM', w.ids_in, w.member)
  if not T.idb then return removed end
  if w.ids_in ~= w.ids_key and removed == 1 and redis.call('EXISTS', w.ids_in) == 0 then
    redis.call('SREM', ids_directory(w.ids_key), string.sub(w.ids_in, #w.ids_key + 2))
  end
  return removed + redis.call('SREM', w.ids_key, w.member)
end

-- Reads this entity's arguments and what is stored: whether it exists, its
-- TTL, and the index entries its stored values (or, once expired, its
-- shadow) hold.
local function begin(keys, args, first)
  local w = { K = keys, A = args, a = first - 1, pre = {}, new = {}, given = {}, keep = {} }
  arg(w) -- the request token, handled by `once`
  w.ns, w.member, w.ttl, w.cas, w.version_expected = arg(w), arg(w), tonumber(arg(w)), arg(w), arg(w)
  -- The conditions on stored values: key position, field ('' for a column
  -- key), test (eq, ne: 'v' value or 'n' nothing; ge, le, gt, lt: a number),
  -- operand, and the delta of a bounded increment ('' for none).
  w.conds = {}
  for j = 1, tonumber(arg(w)) do
    w.conds[j] = { k = tonumber(arg(w)), field = arg(w), test = arg(w), x = arg(w), delta = arg(w) }
  end
  for n, spec in ipairs(T.idx) do
    local v = arg(w)
    w.pre[n] = w.ns .. spec.key
    -- 'w' value / 'm' (none): as 'v' / 'n', refused if the value changes.
    local mark = string.sub(v, 1, 1)
    w.keep[n] = mark == 'w' or mark == 'm'
    if mark == 'w' then v = 'v' .. string.sub(v, 2) elseif mark == 'm' then v = 'n' end
    w.given[n] = string.sub(v, 1, 1) == 'v'
    if w.given[n] and spec.pk then
      -- An indexed pk field: its escaped value, fixed for the entity's lifetime.
      w.new[n] = { [string.sub(v, 2)] = true }
    elseif w.given[n] then
      w.new[n] = entries(spec.kind, string.sub(v, 2))
    elseif v == 'u' then
      w.new[n] = UNCHANGED
      w.unchanged = (w.unchanged or 0) + 1
    elseif v == 'n' or spec.pk then
      w.new[n] = NONE
    else
      w.new[n] = false
    end
  end
  w.ids_key = (#T.idx > 0) and (w.ns .. T.ids) or ''
  -- The set this entity's member goes in: its bucket (`ids_bucket`) or the one set.
  w.ids_in = (T.idb and w.ids_key ~= '') and ids_bucket(w.ids_key, w.member) or w.ids_key
  w.expiry_key = w.ns .. T.expiry
  w.owner_head = w.ns .. T.head
  w.rel_key = w.K[1] .. T.rel
  w.shadow = T.shadow and w.K[T.shadow] or nil
  w.existed, w.old_pttl, w.ghost = false, -1, false
  for i = 1, #w.K do
    if role(i) == 'p' then
      local p = redis.call('PTTL', w.K[i])
      if p ~= -2 then w.existed = true; w.old_pttl = p; break end
    end
  end
  w.old = {}
  if w.existed then
    -- A write that touches no indexed field keeps every entry where it is:
    -- the stored values are not read, unless the entity has or gets a TTL
    -- (its shadow is rewritten from its entries).
    if #T.idx > 0 and w.unchanged == #T.idx and w.ttl <= 0 and w.old_pttl <= 0 then
      for n = 1, #T.idx do w.old[n] = NONE end
    elseif #T.idx > 0 then
      local values = read_values(w, T.all)
      for n, spec in ipairs(T.idx) do
        if spec.pk then w.old[n] = w.new[n]
        else w.old[n] = entries(spec.kind, values[n]) end
      end
    end
  elseif #T.idx > 0 then
    w.old = shadow_entries(w)
    for n = 1, #T.idx do
      if next(w.old[n]) then w.ghost = true end
    end
  end
  for n = 1, #T.idx do
    if w.new[n] == UNCHANGED then w.new[n] = w.old[n] or NONE end
  end
  return w
end

-- Whether this script may write `head .. m .. tail` (lua/slot_tag.lua).
local function local_side(w, head, theirs)
  return side_in_slot(w.K[1], head, theirs)
end

-- A relation set of more members than this is not walked by a delete or
-- sweep (one call would hold the server for its whole size: 200,000
-- followers took 3.8 s; 1,000 about 10 ms): it is renamed to
-- `<set>:@unlinking` and the client takes the entity out of the other
-- sides in pages (unlink.lua). 250, as many as a page of those.
local UNLINK_WHOLE = 250

-- Whether relation set `own` is unlinked in pages: larger than a call
-- walks, and no earlier unlinking of the same set still pending (a
-- rename would overwrite it: the set is then walked whole).
local function unlinked_in_pages(own)
  return redis.call('SCARD', own) > UNLINK_WHOLE
    and redis.call('EXISTS', own .. ':@unlinking') == 0
end

-- Removes the entity from every relation, on both sides. Returns the other
-- sides this script cannot reach (in other slots of a cluster) as a flat
-- list of register entry, member pairs, for the client to clean, and per
-- set unlinked in pages the pair `@unlinking \n <its new key>`, entry.
local function unrelate_all(w)
  local away = {}
  if w.member == '' then return away end
  local flat = redis.call('HGETALL', w.rel_key)
  for j = 1, #flat, 2 do
    local own = w.K[1] .. ':' .. flat[j]
    -- A relation set's entry is `head \n tail \n name \n presence` (how to
    -- find the other side); a timeline's starts with `@list` (or is empty):
    -- a key the entity owns alone.
    local head, tail, other = string.match(flat[j + 1], '^(.-)\n(.-)\n([^\n]*)')
    if head and head ~= '@list' and unlinked_in_pages(own) then
      redis.call('RENAME', own, own .. ':@unlinking')
      away[#away + 1] = '@unlinking\n' .. own .. ':@unlinking'; away[#away + 1] = flat[j + 1]
    elseif head and head ~= '@list' then
      for _, m in ipairs(redis.call('SMEMBERS', own)) do
        local theirs = head .. m .. tail
        if local_side(w, head, theirs) then
          redis.call('SREM', theirs .. ':' .. other, w.member)
          if redis.call('EXISTS', theirs .. ':' .. other) == 0 then
            redis.call('HDEL', theirs .. T.rel, other)
          end
        else
          away[#away + 1] = flat[j + 1]; away[#away + 1] = m
        end
      end
    end
    redis.call('DEL', own)
  end
  redis.call('DEL', w.rel_key)
  return away
end

-- A delete's or sweep's reply: `n`, or `{n, entry, member, ...}` when other
-- sides in other slots are left to the client.
local function with_away(n, away)
  if #away == 0 then return n end
  table.insert(away, 1, n)
  return away
end

-- Whether this script may touch the type's expiry set: always on one
-- server; on a cluster only in the entity's slot. A type without indexes
-- outside a group keeps it outside its entities' hash tags there, so its
-- entities are never listed (one in a relation keeps its relation sets
-- after it expires, until it is deleted or `repair` meets them).
local function expiry_here(w)
  if not string.find(w.K[1], '{', 1, true) then return true end
  return slot_tag(w.expiry_key) == slot_tag(w.K[1])
end

-- Whether the entity may be listed in the expiry set: only indexed entities
-- and entities in a relation are (so a plain entity never touches a shared
-- key, and its writes stay single-slot on a cluster).
local function tracked(w)
  return expiry_here(w) and (#T.idx > 0 or redis.call('EXISTS', w.rel_key) == 1)
end

-- Keeps the shadow and the expiry set in step with the entity's TTL.
local function track_expiry(w, pttl, current)
  -- Without indexes, only an entity in a relation leaves something to sweep.
  if not tracked(w) then return end
  if pttl and pttl > 0 then
    local now = redis.call('TIME')
    local at = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + pttl
    redis.call('ZADD', w.expiry_key, at, w.member)
    if w.shadow then
      redis.call('DEL', w.shadow)
      local flat = {}
      for n = 1, #T.idx do
        local list = {}
        for e in pairs(current[n]) do list[#list + 1] = e end
        if #list > 0 then
          flat[#flat + 1] = tostring(n); flat[#flat + 1] = table.concat(list, ':')
        end
      end
      if #flat > 0 then redis.call('HSET', w.shadow, unpack(flat)) end
    end
  else
    redis.call('ZREM', w.expiry_key, w.member)
    if w.shadow then redis.call('DEL', w.shadow) end
  end
end

-- One index entry of this entity: a set member, a unique key, or a
-- `value:member` entry of a prefix index's sorted set (all scores 0, so
-- ZRANGEBYLEX finds values by prefix; escaped values never contain ':').
local function remove_entry(w, n, e)
  local kind = T.idx[n].kind
  if kind == 'u' then
    local key = w.pre[n] .. e
    if redis.call('GET', key) == w.member then return redis.call('DEL', key) end
    return 0
  elseif kind == 'p' then
    return redis.call('ZREM', w.pre[n], e .. ':' .. w.member)
  elseif kind == 's' then
    return redis.call('ZREM', w.pre[n], w.member)
  end
  return redis.call('SREM', w.pre[n] .. e, w.member)
end

local function add_entry(w, n, e)
  local kind = T.idx[n].kind
  if kind == 'u' then
    -- Checked before the write when the new value came with it; otherwise
    -- never take a unique key from another live owner (only possible when
    -- the data was changed behind the framework's back; verify reports it).
    local owner = false
    if not w.given[n] then owner = redis.call('GET', w.pre[n] .. e) end
    if not owner or owner == w.member or not owner_alive(w, owner) then
      redis.call('SET', w.pre[n] .. e, w.member)
    end
  elseif kind == 'p' then
    redis.call('ZADD', w.pre[n], 0, e .. ':' .. w.member)
  elseif kind == 's' then
    -- A stored value that is not a number has no score, so no entry (as a
    -- write from Rust would give it); a repair then never fails on it.
    if tonumber(e) then redis.call('ZADD', w.pre[n], e, w.member) end
  else
    redis.call('SADD', w.pre[n] .. e, w.member)
  end
end

local function unindex_all(w)
  for n = 1, #T.idx do
    for e in pairs(w.old[n]) do remove_entry(w, n, e) end
  end
  if w.ids_key ~= '' then ids_remove(w) end
end


-- The version is checked before anything is written: a write based on an
-- older read changes nothing.
local function version_conflict(w)
  if w.version_expected == '' or not w.existed or not T.version then return nil end
  local stored
  if T.version.field == '' then stored = redis.call('GET', w.K[T.version.k])
  else stored = redis.call('HGET', w.K[T.version.k], T.version.field) end
  if (stored or '0') ~= w.version_expected then
    return redis.error_reply('VERSION_CONFLICT ' .. tostring(stored or '0'))
  end
  return nil
end

-- The ordering (-1, 0, 1) of two numbers in decimal text: integers exactly,
-- whatever their length (a double holds 53 bits), others as doubles; nil
-- when either is not a number.
local function compare_numbers(x, y)
  if string.match(x, '^%-?%d+$') and string.match(y, '^%-?%d+$') then
    local nx, ny = string.sub(x, 1, 1) == '-', string.sub(y, 1, 1) == '-'
    local ax = string.gsub(nx and string.sub(x, 2) or x, '^0+', '')
    local ay = string.gsub(ny and string.sub(y, 2) or y, '^0+', '')
    if ax == '' then nx = false end
    if ay == '' then ny = false end
    if nx ~= ny then return nx and -1 or 1 end
    local r = 0
    if #ax ~= #ay then r = (#ax < #ay) and -1 or 1
    elseif ax ~= ay then r = (ax < ay) and -1 or 1 end
    return nx and -r or r
  end
  local a, b = tonumber(x), tonumber(y)
  if not a or not b then return nil end
  if a < b then return -1 elseif a > b then return 1 end
  return 0
end

-- The sum of a stored number (nothing stored: 0) and a delta, as decimal
-- text: exact for integers within 2^53, as an increment computes it.
local function plus(v, delta)
  local a, b = tonumber(v or '0'), tonumber(delta)
  if not a or not b then return nil end
  local sum = a + b
  if string.match(delta, '^%-?%d+$') and math.floor(sum) == sum and math.abs(sum) < 2^53 then
    return string.format('%d', sum)
  end
  return tostring(sum)
end

local PASSES = {
  ge = function(r) return r >= 0 end, le = function(r) return r <= 0 end,
  gt = function(r) return r > 0 end, lt = function(r) return r < 0 end,
}

-- The conditions are checked before anything is written: a write whose
-- condition does not hold changes nothing, and its error carries the
-- stored value ('=' value, or '-' for nothing stored).
local function condition_failed(w)
  for j, c in ipairs(w.conds) do
    local v
    if c.field == '' then v = redis.call('GET', w.K[c.k])
    else v = redis.call('HGET', w.K[c.k], c.field) end
    local ok
    if c.test == 'eq' or c.test == 'ne' then
      local same
      if c.x == 'n' then same = not v else same = v == string.sub(c.x, 2) end
      ok = same == (c.test == 'eq')
    else
      local n = v
      if c.delta ~= '' then n = plus(v, c.delta) end
      -- (Nothing stored, or not a number: no ordering, the test fails.)
      local r = n and compare_numbers(n, c.x) or nil
      ok = r ~= nil and PASSES[c.test](r)
    end
    if not ok then
      return redis.error_reply('CONDITION_FAILED ' .. (j - 1) .. ' ' .. (v and ('=' .. v) or '-'))
    end
  end
  return nil
end

-- Unique values are checked before anything is written, so a conflict
-- changes nothing. An owner that no longer exists (expired) does not count.
local function unique_conflict(w)
  for _, n in ipairs(T.unique) do
    local value = w.given[n] and next(w.new[n])
    if value then
      if not w.old[n][value] then
        local owner = redis.call('GET', w.pre[n] .. value)
        if owner and owner ~= w.member and owner_alive(w, owner) then
          return redis.error_reply('UNIQUE_VIOLATION ' .. (n - 1))
        end
      end
    end
  end
  return nil
end

-- On a cluster, a type of many shards keeps the owner of each unique value
-- in a key of the value's own slot, which the client claims before a write
-- that gives the entity a new value. A write sent before that claim ('w' or
-- 'm' values) is refused, with nothing written, when a unique value would
-- change: it returns {'claim', stored value of each unique index ('' for
-- none)}, so that the client claims and, once written, releases the old.
local function claims_needed(w)
  local changed, out = false, { 'claim' }
  for _, n in ipairs(T.unique) do
    local was = w.existed and w.old[n] and next(w.old[n]) or nil
    local now = type(w.new[n]) == 'table' and next(w.new[n]) or nil
    if w.keep[n] and was ~= now then changed = true end
    out[#out + 1] = was or ''
  end
  if changed then return out end
  return nil
end

-- The Redis type each kind of index keeps its entries in.
local ENTRY_TYPE = { u = 'string', e = 'set', t = 'set', p = 'zset', s = 'zset' }

-- The entries of index n this write adds or removes (all of them with
-- `force`): the only index keys it writes.
local function moved_entries(w, n, force)
  local was, now = w.old[n], w.new[n] or NONE
  local out = {}
  if was == now and not force then return out end
  for e in pairs(was) do if force or not now[e] then out[#out + 1] = e end end
  for e in pairs(now) do if force or not was[e] then out[#out + 1] = e end end
  return out
end

-- Checks, before the first write, that every key the write will touch holds
-- the type it needs (or nothing): a key of the wrong type then fails the
-- write with nothing changed, instead of half-way through. On a Redis
-- Cluster a shared key of another slot fails here too, for the same reason.
-- `maps`: the #[hash] maps (written by HSET); `entries`: the index keys of
-- the old (and known new) values, and the set of all ids if the entity is
-- new or `entries` is 'all'; `expiry`: the expiry set and the shadow.
-- (`wrong_type`: lua/key_types.lua, before this prelude.)
local function check_key_types(w, maps, entries, expiry)
  local err
  if maps then
    for i = 1, #w.K do
      if role(i) == 'd' then
        err = wrong_type(w.K[i], 'hash')
        if err then return err end
      end
    end
  end
  if entries and #T.idx > 0 then
    -- The set of all ids changes when an entity comes or goes.
    if entries == 'all' or not w.existed then
      err = wrong_type(w.ids_in, 'set')
        or (T.idb and wrong_type(ids_directory(w.ids_key), 'set'))
        -- A delete also removes from the single set written before buckets.
        or (T.idb and entries == 'all' and wrong_type(w.ids_key, 'set'))
      if err then return err end
    end
    local force = entries == 'all'
    for n, spec in ipairs(T.idx) do
      local t, moved = ENTRY_TYPE[spec.kind], moved_entries(w, n, force)
      if #moved > 0 and (spec.kind == 'p' or spec.kind == 's') then
        err = wrong_type(w.pre[n], t)
        if err then return err end
      elseif #moved > 0 then
        for _, e in ipairs(moved) do
          err = wrong_type(w.pre[n] .. e, t)
          if err then return err end
        end
      end
    end
  end
  -- The expiry set is touched only where track_expiry touches it (a type
  -- without indexes only while in a relation): on a cluster it lives in
  -- another slot than such an entity's keys.
  if expiry and tracked(w) then
    return wrong_type(w.expiry_key, 'zset') or (w.shadow and wrong_type(w.shadow, 'hash')) or nil
  end
  return nil
end

-- Checks, before the first write of a delete or sweep, the keys that
-- `unrelate_all` writes: the register, each relation set the entity owns
-- and, where this script reaches them, the other sides' sets and registers.
local function check_relation_types(w)
  if w.member == '' then return nil end
  -- The register read and its type checked in one command: a register of
  -- another type fails the read, and only then is it named.
  local flat = redis.pcall('HGETALL', w.rel_key)
  if flat.err then
    return wrong_type(w.rel_key, 'hash') or redis.error_reply(flat.err)
  end
  local err
  for j = 1, #flat, 2 do
    local head, tail, other = string.match(flat[j + 1], '^(.-)\n(.-)\n([^\n]*)')
    if head and head ~= '@list' then
      local own = w.K[1] .. ':' .. flat[j]
      err = wrong_type(own, 'set') or wrong_type(own .. ':@unlinking', 'set')
      if err then return err end
      -- A set unlinked in pages: each page checks the sides it writes.
      local members = unlinked_in_pages(own) and {} or redis.call('SMEMBERS', own)
      for _, m in ipairs(members) do
        local theirs = head .. m .. tail
        if local_side(w, head, theirs) then
          err = wrong_type(theirs .. ':' .. other, 'set') or wrong_type(theirs .. T.rel, 'hash')
          if err then return err end
        end
      end
    end
  end
  return nil
end

-- Whether a change of stored values touches index keys: some entry may
-- move, or the entity is new (its id is added).
local function entries_move(w, force)
  if #T.idx == 0 then return false end
  if force then return 'all' end
  if not w.existed then return true end
  for n = 1, #T.idx do
    if w.new[n] ~= w.old[n] then return true end
  end
  return false
end

-- Whether a change of stored values touches the expiry set.
local function expiry_moves(w)
  return w.ttl > 0 or w.ghost or (w.existed and w.old_pttl > 0) or (not w.existed and T.default_ttl > 0)
end

-- Increments fail on a stored value that is not a number of their kind:
-- every one is checked before the first write, so that such a write
-- changes nothing.
local function check_numbers(w, last)
  local i = w.a + 1
  while i <= last do
    local op, k, n = w.A[i], tonumber(w.A[i + 1]), tonumber(w.A[i + 2])
    local f = i + 3
    local field, v = nil, nil
    if op == 'HINCRBY' or op == 'HINCRBYFLOAT' then
      field = w.A[f]; v = redis.call('HGET', w.K[k], field)
    elseif op == 'INCRBY' or op == 'INCRBYFLOAT' then
      field = ''; v = redis.call('GET', w.K[k])
    end
    if not accepts_increment(op, v) then return not_a_number(k, field, v) end
    i = f + n
  end
  return nil
end

-- The entries an increment gives an equality index are known only once it
-- ran, and their key (`<prefix><value>`) only then: each such increment is
-- run first, the value read back and the stored value put back as it was
-- (the field or column deleted if there was none), so that the key's type
-- is checked with the others before the write. The write then runs the
-- same increments again, to the same values. Sorted and prefix indexes
-- keep one key whatever the value: nothing to probe.
local function probe_increments(w, last)
  local probed, saved = {}, {}
  for n, spec in ipairs(T.idx) do
    if w.new[n] == false and (spec.kind == 'e' or spec.kind == 't' or spec.kind == 'u') then
      probed[#probed + 1] = n
    end
  end
  if #probed == 0 then return end
  local i = w.a + 1
  while i <= last do
    local op, k, n = w.A[i], tonumber(w.A[i + 1]), tonumber(w.A[i + 2])
    local f = i + 3
    local hash = op == 'HINCRBY' or op == 'HINCRBYFLOAT'
    if hash or op == 'INCRBY' or op == 'INCRBYFLOAT' then
      local field = hash and w.A[f] or ''
      local id = k .. ' ' .. field
      if not saved[id] then
        local v
        if hash then v = redis.call('HGET', w.K[k], field) else v = redis.call('GET', w.K[k]) end
        saved[id] = { k = k, field = field, value = v or false }
      end
      if hash then redis.call(op, w.K[k], field, w.A[f + 1]) else redis.call(op, w.K[k], w.A[f]) end
    end
    i = f + n
  end
  local values = read_values(w, probed)
  for _, n in ipairs(probed) do w.new[n] = entries(T.idx[n].kind, values[n]) end
  for _, s in pairs(saved) do
    if s.field ~= '' and s.value then redis.call('HSET', w.K[s.k], s.field, s.value)
    elseif s.field ~= '' then redis.call('HDEL', w.K[s.k], s.field)
    elseif s.value then redis.call('SET', w.K[s.k], s.value, 'KEEPTTL')
    else redis.call('DEL', w.K[s.k]) end
  end
end

-- The data commands of the write (name, key position, argument count,
-- arguments), from the current argument to the end; returns the keys
-- written whose TTL may need restoring.
local function apply_data(w, last)
  local touched = {}
  local i = w.a + 1
  while i <= last do
    local op, k, n = w.A[i], tonumber(w.A[i + 1]), tonumber(w.A[i + 2])
    local key, f = w.K[k], i + 3
    if op == 'HSET' then
      hset(w.A, key, f, f + n - 1); touched[k] = true
    elseif op == 'HDEL' then
      redis.call('HDEL', key, unpack(w.A, f, f + n - 1))
    elseif op == 'SET' then
      local own = tonumber(w.A[f + 1])
      if own > 0 then
        redis.call('SET', key, w.A[f], 'PX', own)
      else
        redis.call('SET', key, w.A[f], 'KEEPTTL'); touched[k] = true
      end
    elseif op == 'DEL' then
      redis.call('DEL', key)
    elseif op == 'HREPLACE' then
      -- A replaced map of any size is freed in the background.
      redis.call('UNLINK', key)
      if n > 0 then hset(w.A, key, f, f + n - 1); touched[k] = true end
    elseif op == 'HINCRBY' or op == 'HINCRBYFLOAT' then
      redis.call(op, key, w.A[f], w.A[f + 1]); touched[k] = true
    elseif op == 'INCRBY' or op == 'INCRBYFLOAT' then
      redis.call(op, key, w.A[f])
      if role(k) ~= 'o' then touched[k] = true end
    else
      return nil, redis.error_reply('ERR redis-entity: unknown data command ' .. tostring(op))
    end
    i = f + n
  end
  w.a = last
  return touched
end

-- Index entries follow the values now stored: remove what the old values
-- put there (or, for an entity re-created after it expired, what its shadow
-- lists), add what the new ones need. `force` re-adds every entry.
local function move_index_entries(w, force)
  local unknown
  for n = 1, #T.idx do
    if not w.new[n] then unknown = unknown or {}; unknown[#unknown + 1] = n end
  end
  if unknown then
    local values = read_values(w, unknown)
    for _, n in ipairs(unknown) do w.new[n] = entries(T.idx[n].kind, values[n]) end
  end
  for n, spec in ipairs(T.idx) do
    local now, was = w.new[n], w.old[n]
    -- (A sorted entry is one member with a score: ZADD replaces the score,
    -- so the old entry goes only when there is no new one.)
    if spec.kind ~= 's' or not next(now) then
      for e in pairs(was) do
        if not now[e] then remove_entry(w, n, e) end
      end
    end
    for e in pairs(now) do
      if force or not was[e] then add_entry(w, n, e) end
    end
  end
  if w.ids_key ~= '' and (force or not w.existed) then ids_add(w, force) end
  return w.new
end

-- The presence marker. In the strings layout (a type none of whose
-- columns shows that the entity exists: all optional, or with a TTL of
-- their own) it is kept as long as the entity is: it is the key that
-- carries the entity's TTL and that relations, unique owners and repairs
-- check for the entity (keyspace::ttl_key), which a marker dropped once a
-- column was stored left missing. In a hash, only while the hash has no
-- other field (the hash itself is that key).
local function fix_marker(w, touched)
  if T.marker == 'string' then
    redis.call('SET', w.K[1], '', 'KEEPTTL'); touched[1] = true
  elseif T.marker == 'hash' then
    local len = redis.call('HLEN', w.K[1])
    if len == 0 then redis.call('HSET', w.K[1], '', ''); touched[1] = true
    elseif len > 1 then redis.call('HDEL', w.K[1], '') end
  end
end

-- Gives the written keys their TTL: the one asked for, else the entity's
-- remaining one, else a new entity's default; then the shadow follows.
local function finish_ttl(w, touched, current)
  local final_ttl = -1
  if w.ttl > 0 then
    final_ttl = w.ttl
    for j = 1, #w.K do
      if role(j) ~= 'o' and role(j) ~= 's' then redis.call('PEXPIRE', w.K[j], w.ttl) end
    end
  elseif w.ttl == 0 then
    -- Asked to live without a TTL (`save_without_ttl`, `update().persist()`).
    for j = 1, #w.K do
      if role(j) ~= 'o' and role(j) ~= 's' then redis.call('PERSIST', w.K[j]) end
    end
  elseif w.existed and w.old_pttl > 0 then
    final_ttl = w.old_pttl
    for j in pairs(touched) do
      if redis.call('PTTL', w.K[j]) == -1 then redis.call('PEXPIRE', w.K[j], w.old_pttl) end
    end
  elseif not w.existed and T.default_ttl > 0 then
    final_ttl = T.default_ttl
    for j in pairs(touched) do redis.call('PEXPIRE', w.K[j], T.default_ttl) end
  end
  -- Only entities that have (or had) a TTL pay for the shadow.
  if final_ttl > 0 or w.ghost or (w.existed and w.old_pttl > 0) then
    track_expiry(w, final_ttl, current)
  end
end

-- Runs a write once per request token: a retry of a write whose reply was
-- lost (a timeout) finds the outcome the first attempt left, under the
-- entity's key, for T.request_ms, and returns it instead of applying the
-- write again (an increment counts once, an insert does not find itself).
-- Only successes are kept: a refused write changed nothing, so running it
-- again is harmless.
local function once(run, keys, args, first, last, ...)
  local token = args[first]
  if token == '' then return run(keys, args, first, last, ...) end
  local key = keys[1] .. T.request .. token
  local done = redis.call('GET', key)
  if done then return tonumber(done) end
  local outcome = run(keys, args, first, last, ...)
  -- A delete that leaves other sides to the client records its number: a
  -- retry does not clean them again (verify reports what is left).
  local n = outcome
  if type(outcome) == 'table' and type(outcome[1]) == 'number' then n = outcome[1] end
  if type(n) == 'number' then
    redis.call('SET', key, n, 'PX', T.request_ms)
  end
  return outcome
end

-- A change of stored values (save, insert, update, compare-and-set,
-- reindex) in two phases: every check (nothing written; a refusal is
-- returned), then data, index entries, marker and TTL. A unit of work runs
-- the checks of all its operations before the first write.
local function check_change(w, last, force)
  local refused = version_conflict(w)
    or condition_failed(w)
    or claims_needed(w)
    or check_numbers(w, last)
  if refused then return refused end
  probe_increments(w, last)
  return check_key_types(w, true, entries_move(w, force), expiry_moves(w))
    or unique_conflict(w)
end

local function apply_change(w, last, force)
  local touched, bad = apply_data(w, last)
  if not touched then return bad end
  local current = move_index_entries(w, force)
  fix_marker(w, touched)
  finish_ttl(w, touched, current)
  if w.existed then return 0 end
  return 1
end

local function change(w, last, force)
  local refused = check_change(w, last, force)
  if refused then return refused end
  return apply_change(w, last, force)
end
