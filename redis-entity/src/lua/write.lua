-- redis-entity: one atomic write of one entity (save, insert, update, delete,
-- expire, persist, compare-and-set) together with all its index entries.
-- The runtime loads it once and calls it with EVALSHA.
--
-- KEYS: the entity's keys (base, then strings-layout columns, then #[hash] maps);
--       they share one hash tag. Index keys are derived here from the values
--       stored in Redis, so what is removed never depends on the caller's copy.
-- ARGV, in order:
--   mode: save | insert | update | cas | delete | expire | persist | clean |
--         reindex (an update that also re-adds every entry the stored values need) |
--         sweep (unindex the entity if it has expired)
--   roles: one letter per key: p = its existence means the entity exists,
--          o = a column with its own TTL, d = other data (a #[hash] map),
--          s = the index shadow: the entity's index entries, kept without
--          expiry while the entity has a TTL, so that the entries of an
--          expired entity can still be found and removed
--       (the relation register `<entity key>:@rel`, in the same slot, lists
--       per relation set of the entity `head \n tail \n name` of the sets on
--       the other side; delete and sweep remove the entity from both sides)
--   ttl: ms to set on every key (-1: keep the remaining TTL)
--   default ttl: ms for a newly created entity (0: none)
--   marker: none | string | hash (kept only while nothing else shows that
--           the entity exists, e.g. all its columns are None)
--   cas: the JSON document the caller read (cas mode)
--   member: the entity's pk as stored in index sets ('' without indexes)
--   ids key: the set of all members of the entity type ('' without indexes)
--   expiry key: sorted set of members with a TTL, scored by expiry time in ms
--   owner head, then a count and that many suffixes: head..member..suffix are
--          the presence keys of the entity with that member (to tell whether
--          the owner of a unique value still exists)
--   index count, then per index: kind (e = equality, u = unique, t = tags,
--          p = prefix: a sorted set of `escaped value:member`, s = sorted:
--          a sorted set of members scored by the value),
--          key position, hash field ('' = the key itself is the column),
--          fixed value (v.. = the escaped value of an indexed pk field, which
--          never changes; '' for a stored column), index key prefix (for
--          kind p the sorted set's key),
--          new value ('' = not known: read it after the write; n = None;
--          v.. = the stored form this write gives the field)
--   version: key position, hash field ('' = the key is the column) and the
--          version the caller read ('' = no check): optimistic concurrency
--   ops: name, key position, argument count, arguments...
--        (clean mode: pairs of index number and escaped value, each an index
--        entry a reader found stale; removed unless the stored value needs it)
local a = 0
local function arg() a = a + 1; return ARGV[a] end
local mode, roles = arg(), arg()
local ttl, default_ttl = tonumber(arg()), tonumber(arg())
local marker, cas, member, ids_key = arg(), arg(), arg(), arg()
local expiry_key = arg()
local owner_head = arg()
local suffixes = {}
for s = 1, tonumber(arg()) do suffixes[s] = arg() end
local idx = {}
for n = 1, tonumber(arg()) do
  idx[n] = { kind = arg(), k = tonumber(arg()), field = arg(), fixed = arg(), prefix = arg(), new = arg() }
end

local version_k, version_field, version_expected = tonumber(arg()), arg(), arg()

local function role(i) return string.sub(roles, i, i) end

-- The injective escaping of values inside keys; same as redis_entity::key.
local function esc(v)
  if v == '' then return '%_' end
  if not string.find(v, '[%%:{}%*%?%[%]\\]') then return v end
  return (string.gsub(v, '[%%:{}%*%?%[%]\\]', function(c)
    return string.format('%%%02X', string.byte(c))
  end))
end

-- Old values of all indexed columns, read in one call per key kind.
local function read_values(list)
  local out = {}
  local fields, fields_at, columns, columns_at = {}, {}, {}, {}
  for _, n in ipairs(list) do
    local spec = idx[n]
    if spec.fixed == '' then
      if spec.field == '' then
        columns[#columns + 1] = KEYS[spec.k]; columns_at[#columns_at + 1] = n
      else
        fields[#fields + 1] = spec.field; fields_at[#fields_at + 1] = n
      end
    end
  end
  if #fields > 0 then
    local vs = redis.call('HMGET', KEYS[1], unpack(fields))
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

local function owner_alive(owner)
  for s = 1, #suffixes do
    if redis.call('EXISTS', owner_head .. owner .. suffixes[s]) == 1 then return true end
  end
  return false
end

local existed, old_pttl = false, -1
for i = 1, #KEYS do
  if role(i) == 'p' then
    local p = redis.call('PTTL', KEYS[i])
    if p ~= -2 then existed = true; old_pttl = p; break end
  end
end

-- The entries a stored entity has: from its stored values, or for a pk
-- field the fixed value, present while the entity exists.
local function fixed_entries(spec, exists)
  if exists then return { [string.sub(spec.fixed, 2)] = true } end
  return {}
end

local shadow
for i = 1, #KEYS do
  if role(i) == 's' then shadow = KEYS[i] end
end
local rel_key = KEYS[1] .. ':@rel'

-- Removes the entity from every relation, on both sides.
local function unrelate_all()
  if member == '' then return end
  local flat = redis.call('HGETALL', rel_key)
  for j = 1, #flat, 2 do
    local own = KEYS[1] .. ':' .. flat[j]
    -- An empty entry is a key the entity owns alone (a timeline).
    local head, tail, other = string.match(flat[j + 1], '^(.-)\n(.-)\n(.*)$')
    if head then
      for _, m in ipairs(redis.call('SMEMBERS', own)) do
        local theirs = head .. '{' .. m .. '}' .. tail
        redis.call('SREM', theirs .. ':' .. other, member)
        if redis.call('EXISTS', theirs .. ':' .. other) == 0 then
          redis.call('HDEL', theirs .. ':@rel', other)
        end
      end
    end
    redis.call('DEL', own)
  end
  redis.call('DEL', rel_key)
end

-- The entries of an entity that expired: its shadow. Joined by ':', which
-- no escaped entry contains.
local function shadow_entries()
  local out = {}
  local stored = {}
  if shadow then
    local flat = redis.call('HGETALL', shadow)
    for j = 1, #flat, 2 do stored[tonumber(flat[j])] = flat[j + 1] end
  end
  for n = 1, #idx do
    out[n] = {}
    if stored[n] then
      for e in string.gmatch(stored[n], '[^:]+') do out[n][e] = true end
    end
  end
  return out
end

local old = {}
local ghost = false
if existed then
  local all = {}
  for n = 1, #idx do all[n] = n end
  local values = read_values(all)
  for n, spec in ipairs(idx) do
    if spec.fixed ~= '' then old[n] = fixed_entries(spec, true)
    else old[n] = entries(spec.kind, values[n]) end
  end
elseif #idx > 0 then
  old = shadow_entries()
  for n = 1, #idx do
    if next(old[n]) then ghost = true end
  end
end

-- Keeps the shadow and the expiry set in step with the entity's TTL.
local function track_expiry(pttl, current)
  if expiry_key == '' then return end
  -- Without indexes, only an entity in a relation leaves something to sweep.
  if #idx == 0 and redis.call('EXISTS', rel_key) == 0 then return end
  if pttl and pttl > 0 then
    local now = redis.call('TIME')
    local at = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + pttl
    redis.call('ZADD', expiry_key, at, member)
    if shadow then
      redis.call('DEL', shadow)
      local flat = {}
      for n = 1, #idx do
        local list = {}
        for e in pairs(current[n]) do list[#list + 1] = e end
        if #list > 0 then
          flat[#flat + 1] = tostring(n); flat[#flat + 1] = table.concat(list, ':')
        end
      end
      if #flat > 0 then redis.call('HSET', shadow, unpack(flat)) end
    end
  else
    redis.call('ZREM', expiry_key, member)
    if shadow then redis.call('DEL', shadow) end
  end
end

-- One index entry of this entity: a set member, a unique key, or a
-- `value:member` entry of a prefix index's sorted set (all scores 0, so
-- ZRANGEBYLEX finds values by prefix; escaped values never contain ':').
local function remove_entry(spec, e)
  if spec.kind == 'u' then
    local key = spec.prefix .. e
    if redis.call('GET', key) == member then return redis.call('DEL', key) end
    return 0
  elseif spec.kind == 'p' then
    return redis.call('ZREM', spec.prefix, e .. ':' .. member)
  elseif spec.kind == 's' then
    return redis.call('ZREM', spec.prefix, member)
  end
  return redis.call('SREM', spec.prefix .. e, member)
end

local function add_entry(spec, e)
  if spec.kind == 'u' then
    -- Checked before the write when the new value came with it; otherwise
    -- never take a unique key from another live owner (only possible when
    -- the data was changed behind the framework's back; verify reports it).
    local owner = false
    if string.sub(spec.new, 1, 1) ~= 'v' then owner = redis.call('GET', spec.prefix .. e) end
    if not owner or owner == member or not owner_alive(owner) then
      redis.call('SET', spec.prefix .. e, member)
    end
  elseif spec.kind == 'p' then
    redis.call('ZADD', spec.prefix, 0, e .. ':' .. member)
  elseif spec.kind == 's' then
    redis.call('ZADD', spec.prefix, e, member)
  else
    redis.call('SADD', spec.prefix .. e, member)
  end
end

local function unindex_all()
  for n, spec in ipairs(idx) do
    for e in pairs(old[n]) do remove_entry(spec, e) end
  end
  if ids_key ~= '' then redis.call('SREM', ids_key, member) end
end

if mode == 'clean' and not existed and ghost then
  -- The entity expired: every entry its shadow lists goes, not only those
  -- the reader met.
  unindex_all()
  redis.call('DEL', shadow)
  if expiry_key ~= '' then redis.call('ZREM', expiry_key, member) end
end
if mode == 'clean' then
  local removed = 0
  for j = a + 1, #ARGV, 2 do
    local n, e = tonumber(ARGV[j]), ARGV[j + 1]
    local spec = idx[n]
    if spec and spec.kind == 'p' then
      -- A reader knows the prefix it searched, not the stale value: remove
      -- every entry of this member in that range that the stored value does
      -- not need.
      for _, entry in ipairs(redis.call('ZRANGEBYLEX', spec.prefix, '[' .. e, '(' .. e .. '\255')) do
        local sep = string.find(entry, ':', 1, true)
        if sep and string.sub(entry, sep + 1) == member then
          local v = string.sub(entry, 1, sep - 1)
          if not (existed and old[n][v]) then removed = removed + redis.call('ZREM', spec.prefix, entry) end
        end
      end
    elseif spec and spec.kind == 's' then
      -- A sorted entry with a wrong score is rewritten from the stored value.
      if existed and next(old[n]) then
        for v in pairs(old[n]) do add_entry(spec, v) end
      else
        removed = removed + remove_entry(spec, e)
      end
    elseif spec and not (existed and old[n][e]) then
      removed = removed + remove_entry(spec, e)
    end
  end
  if not existed and ids_key ~= '' then removed = removed + redis.call('SREM', ids_key, member) end
  return removed
end

-- Whether the entity may be listed in the expiry set: only indexed entities
-- and entities in a relation are (so a plain entity never touches a shared
-- key, and its writes stay single-slot on a cluster).
local function tracked()
  return expiry_key ~= '' and (#idx > 0 or redis.call('EXISTS', rel_key) == 1)
end

if mode == 'delete' then
  local was_tracked = tracked()
  unindex_all()
  unrelate_all()
  redis.call('DEL', unpack(KEYS))
  if was_tracked then redis.call('ZREM', expiry_key, member) end
  if existed then return 1 end
  return 0
end
if mode == 'sweep' then
  if existed then
    track_expiry(old_pttl, old)
    return 0
  end
  unindex_all()
  unrelate_all()
  if shadow then redis.call('DEL', shadow) end
  if expiry_key ~= '' then redis.call('ZREM', expiry_key, member) end
  return 1
end
if mode == 'insert' and existed then
  return redis.error_reply('ENTITY_EXISTS entity already stored')
end
if mode ~= 'save' and mode ~= 'insert' and not existed then
  return redis.error_reply('ENTITY_NOT_FOUND no entity stored')
end
if mode == 'expire' or mode == 'persist' then
  for i = 1, #KEYS do
    if role(i) ~= 'o' and role(i) ~= 's' then
      if mode == 'expire' then redis.call('PEXPIRE', KEYS[i], ttl)
      else redis.call('PERSIST', KEYS[i]) end
    end
  end
  if mode == 'expire' then track_expiry(ttl, old) else track_expiry(-1, old) end
  return 1
end
if mode == 'cas' and redis.call('GET', KEYS[1]) ~= cas then
  return redis.error_reply('ENTITY_CHANGED document changed since it was read')
end

-- The version is checked before anything is written: a save based on an
-- older read changes nothing.
if version_expected ~= '' and existed and version_k then
  local stored
  if version_field == '' then stored = redis.call('GET', KEYS[version_k])
  else stored = redis.call('HGET', KEYS[version_k], version_field) end
  if (stored or '0') ~= version_expected then
    return redis.error_reply('VERSION_CONFLICT ' .. tostring(stored or '0'))
  end
end

-- Unique values are checked before anything is written, so a conflict
-- changes nothing. An owner that no longer exists (expired) does not count.
for n, spec in ipairs(idx) do
  if spec.kind == 'u' and string.sub(spec.new, 1, 1) == 'v' then
    local value = esc(string.sub(spec.new, 2))
    if not old[n][value] then
      local owner = redis.call('GET', spec.prefix .. value)
      if owner and owner ~= member and owner_alive(owner) then
        return redis.error_reply('UNIQUE_VIOLATION ' .. (n - 1))
      end
    end
  end
end

-- Shared index keys are touched before the entity is written: on a Redis
-- Cluster, where they live in other slots, the script fails here, before
-- anything changed, instead of half-way through.
if #idx > 0 then
  local probe = { KEYS[1], ids_key }
  for n, spec in ipairs(idx) do
    if spec.kind == 'p' or spec.kind == 's' then
      probe[#probe + 1] = spec.prefix
    else
      for e in pairs(old[n]) do probe[#probe + 1] = spec.prefix .. e end
      if string.sub(spec.new, 1, 1) == 'v' then
        for e in pairs(entries(spec.kind, string.sub(spec.new, 2))) do
          probe[#probe + 1] = spec.prefix .. e
        end
      end
    end
  end
  redis.call('EXISTS', unpack(probe))
end

-- HSET in chunks: unpack() of a very large argument list overflows Lua's C stack.
local function hset(key, first, last)
  for s = first, last, 1000 do
    redis.call('HSET', key, unpack(ARGV, s, math.min(s + 999, last)))
  end
end

local touched = {}
local i = a + 1
while i <= #ARGV do
  local op, k, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local key, f = KEYS[k], i + 3
  if op == 'HSET' then
    hset(key, f, f + n - 1); touched[k] = true
  elseif op == 'HDEL' then
    redis.call('HDEL', key, unpack(ARGV, f, f + n - 1))
  elseif op == 'SET' then
    local own = tonumber(ARGV[f + 1])
    if own > 0 then
      redis.call('SET', key, ARGV[f], 'PX', own)
    else
      redis.call('SET', key, ARGV[f], 'KEEPTTL'); touched[k] = true
    end
  elseif op == 'DEL' then
    redis.call('DEL', key)
  elseif op == 'HREPLACE' then
    redis.call('DEL', key)
    if n > 0 then hset(key, f, f + n - 1); touched[k] = true end
  elseif op == 'HINCRBY' or op == 'HINCRBYFLOAT' then
    redis.call(op, key, ARGV[f], ARGV[f + 1]); touched[k] = true
  elseif op == 'INCRBY' or op == 'INCRBYFLOAT' then
    redis.call(op, key, ARGV[f])
    if role(k) ~= 'o' then touched[k] = true end
  else
    return redis.error_reply('ERR redis-entity: unknown op ' .. tostring(op))
  end
  i = f + n
end

-- Index entries follow the values now stored: remove what the old values
-- put there (or, for an entity re-created after it expired, what its shadow
-- lists), add what the new ones need.
local new_all
do
  local unknown = {}
  for n, spec in ipairs(idx) do
    if spec.fixed == '' and spec.new == '' then unknown[#unknown + 1] = n end
  end
  local values = (#unknown > 0) and read_values(unknown) or {}
  local force = mode == 'reindex'
  new_all = {}
  for n, spec in ipairs(idx) do
    local new
    if spec.fixed ~= '' then new = fixed_entries(spec, true)
    elseif spec.new == '' then new = entries(spec.kind, values[n])
    elseif spec.new == 'n' then new = {}
    else new = entries(spec.kind, string.sub(spec.new, 2)) end
    -- (A sorted entry is one member with a score: ZADD replaces the score,
    -- so the old entry goes only when there is no new one.)
    if spec.kind ~= 's' or not next(new) then
      for e in pairs(old[n]) do
        if not new[e] then remove_entry(spec, e) end
      end
    end
    for e in pairs(new) do
      if force or not old[n][e] then add_entry(spec, e) end
    end
    new_all[n] = new
  end
  if ids_key ~= '' and (force or not existed) then redis.call('SADD', ids_key, member) end
end


if marker == 'string' then
  local other = false
  for j = 2, #KEYS do
    if role(j) == 'p' and redis.call('EXISTS', KEYS[j]) == 1 then other = true; break end
  end
  if other then redis.call('DEL', KEYS[1])
  else redis.call('SET', KEYS[1], '', 'KEEPTTL'); touched[1] = true end
elseif marker == 'hash' then
  local len = redis.call('HLEN', KEYS[1])
  if len == 0 then redis.call('HSET', KEYS[1], '', ''); touched[1] = true
  elseif len > 1 then redis.call('HDEL', KEYS[1], '') end
end

local final_ttl = -1
if ttl > 0 then
  final_ttl = ttl
  for j = 1, #KEYS do
    if role(j) ~= 'o' and role(j) ~= 's' then redis.call('PEXPIRE', KEYS[j], ttl) end
  end
elseif existed and old_pttl > 0 then
  final_ttl = old_pttl
  for j in pairs(touched) do
    if redis.call('PTTL', KEYS[j]) == -1 then redis.call('PEXPIRE', KEYS[j], old_pttl) end
  end
elseif not existed and default_ttl > 0 then
  final_ttl = default_ttl
  for j in pairs(touched) do redis.call('PEXPIRE', KEYS[j], default_ttl) end
end
-- Only entities that have (or had) a TTL pay for the shadow.
if final_ttl > 0 or ghost or (existed and old_pttl > 0) then
  track_expiry(final_ttl, new_all)
end

if existed then return 0 end
return 1
