-- redis-entity: one atomic write of one entity (save, insert, update, delete,
-- expire, persist, compare-and-set). The runtime loads it once and calls it
-- with EVALSHA; every key in KEYS belongs to the same entity and carries the
-- same hash tag, so the script is legal on Redis Cluster.
--
-- KEYS: the entity's keys (base, then strings-layout columns, then #[hash] maps)
-- ARGV[1] mode: save | insert | update | cas | delete | expire | persist
-- ARGV[2] one role letter per key: p = its existence means the entity exists,
--         o = a column with its own TTL, d = other data (a #[hash] map)
-- ARGV[3] TTL in ms to set on every key (-1: keep the remaining TTL)
-- ARGV[4] TTL in ms for a newly created entity (0: none)
-- ARGV[5] presence marker: none | string | hash (kept only while nothing
--         else shows that the entity exists, e.g. all its columns are None)
-- ARGV[6] cas: the JSON document the caller read
-- ARGV[7..] ops: name, key index, argument count, arguments...
local mode, roles = ARGV[1], ARGV[2]
local ttl, default_ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local marker = ARGV[5]

local function role(i) return string.sub(roles, i, i) end

local existed, old_pttl = false, -1
for i = 1, #KEYS do
  if role(i) == 'p' then
    local p = redis.call('PTTL', KEYS[i])
    if p ~= -2 then existed = true; old_pttl = p; break end
  end
end

if mode == 'delete' then
  redis.call('DEL', unpack(KEYS))
  if existed then return 1 end
  return 0
end
if mode == 'insert' and existed then
  return redis.error_reply('ENTITY_EXISTS entity already stored')
end
if mode ~= 'save' and mode ~= 'insert' and not existed then
  return redis.error_reply('ENTITY_NOT_FOUND no entity stored')
end
if mode == 'expire' or mode == 'persist' then
  for i = 1, #KEYS do
    if role(i) ~= 'o' then
      if mode == 'expire' then redis.call('PEXPIRE', KEYS[i], ttl)
      else redis.call('PERSIST', KEYS[i]) end
    end
  end
  return 1
end
if mode == 'cas' and redis.call('GET', KEYS[1]) ~= ARGV[6] then
  return redis.error_reply('ENTITY_CHANGED document changed since it was read')
end

-- HSET in chunks: unpack() of a very large argument list overflows Lua's C stack.
local function hset(key, first, last)
  for s = first, last, 1000 do
    redis.call('HSET', key, unpack(ARGV, s, math.min(s + 999, last)))
  end
end

local touched = {}
local i = 7
while i <= #ARGV do
  local op, k, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local key, a = KEYS[k], i + 3
  if op == 'HSET' then
    hset(key, a, a + n - 1); touched[k] = true
  elseif op == 'HDEL' then
    redis.call('HDEL', key, unpack(ARGV, a, a + n - 1))
  elseif op == 'SET' then
    local own = tonumber(ARGV[a + 1])
    if own > 0 then
      redis.call('SET', key, ARGV[a], 'PX', own)
    else
      redis.call('SET', key, ARGV[a], 'KEEPTTL'); touched[k] = true
    end
  elseif op == 'DEL' then
    redis.call('DEL', key)
  elseif op == 'HREPLACE' then
    redis.call('DEL', key)
    if n > 0 then hset(key, a, a + n - 1); touched[k] = true end
  elseif op == 'HINCRBY' or op == 'HINCRBYFLOAT' then
    redis.call(op, key, ARGV[a], ARGV[a + 1]); touched[k] = true
  elseif op == 'INCRBY' or op == 'INCRBYFLOAT' then
    redis.call(op, key, ARGV[a])
    if role(k) ~= 'o' then touched[k] = true end
  else
    return redis.error_reply('ERR redis-entity: unknown op ' .. tostring(op))
  end
  i = a + n
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

if ttl > 0 then
  for j = 1, #KEYS do
    if role(j) ~= 'o' then redis.call('PEXPIRE', KEYS[j], ttl) end
  end
elseif existed and old_pttl > 0 then
  for j in pairs(touched) do
    if redis.call('PTTL', KEYS[j]) == -1 then redis.call('PEXPIRE', KEYS[j], old_pttl) end
  end
elseif not existed and default_ttl > 0 then
  for j in pairs(touched) do redis.call('PEXPIRE', KEYS[j], default_ttl) end
end

if existed then return 0 end
return 1
