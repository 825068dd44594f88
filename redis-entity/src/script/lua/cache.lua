-- redis-entity: the read-through cache, one script, four modes.
--
-- KEYS[1]: the cached value: 'n' (a cached miss) or 'v<soft expiry ms>:<json>'
-- KEYS[2]: the rebuild lock, holding the token of the one caller that loads.
--          The token is also the load's fencing token: a load's result is
--          stored only while its lock still holds its token, checked here, in
--          the same script as the write. A load that outlived its lock (past
--          the cache's max_load, or stalled past the lock's expiry) may have
--          been taken over, and its late result is then never stored over
--          the newer one.
-- ARGV[1]: mode: get | put | renew | release
-- get:     ARGV[2] token, ARGV[3] lock ms, ARGV[4] '1' to rebuild stale values
--          returns {1, value} a hit; {2, value} a stale hit, and this caller
--          now holds the lock and rebuilds; {3} a miss, this caller holds the
--          lock and loads; {0} a miss another caller is loading
-- put:     ARGV[2] token, ARGV[3] kind (v | n), ARGV[4] json, ARGV[5] soft ttl ms,
--          ARGV[6] hard ttl ms; if this caller still holds the lock: stores
--          the value, releases the lock, returns {1}; else (fenced off) stores
--          nothing and returns {0, the value cached now} ({0} if none)
-- renew:   ARGV[2] token, ARGV[3] lock ms; sets the lock's expiry to that
--          while this caller still holds it (a long load keeps it; the caller
--          shortens the last renewal so that the lock lapses at max_load),
--          returns 1, else 0
-- release: ARGV[2] token; releases the lock if this caller still holds it
--          (compare-and-delete: a lock that expired and was taken by another
--          caller is not released by mistake)
local mode = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function release(token)
  if redis.call('GET', KEYS[2]) == token then redis.call('DEL', KEYS[2]) end
end

if mode == 'get' then
  local v = redis.call('GET', KEYS[1])
  if v then
    if ARGV[4] == '1' and string.sub(v, 1, 1) == 'v' then
      local sep = string.find(v, ':', 2, true)
      local soft = sep and tonumber(string.sub(v, 2, sep - 1))
      if soft and soft <= now_ms()
        and redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then
        return { 2, v }
      end
    end
    return { 1, v }
  end
  if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return { 3 } end
  return { 0 }
elseif mode == 'put' then
  if redis.call('GET', KEYS[2]) ~= ARGV[2] then
    local now = redis.call('GET', KEYS[1])
    if now then return { 0, now } end
    return { 0 }
  end
  if ARGV[3] == 'v' then
    redis.call('SET', KEYS[1], 'v' .. (now_ms() + tonumber(ARGV[5])) .. ':' .. ARGV[4], 'PX', ARGV[6])
  else
    redis.call('SET', KEYS[1], 'n', 'PX', ARGV[6])
  end
  redis.call('DEL', KEYS[2])
  return { 1 }
elseif mode == 'renew' then
  if redis.call('GET', KEYS[2]) == ARGV[2] then
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
    return 1
  end
  return 0
elseif mode == 'release' then
  release(ARGV[2])
  return 1
end
return redis.error_reply('ERR redis-entity cache: unknown mode')
