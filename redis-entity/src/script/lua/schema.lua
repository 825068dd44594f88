#!lua flags=allow-oom
-- redis-entity: a type's schema record, `<type space><prefix>:@schema` (a hash).
--
-- Fields: `current`, the fingerprint of the definition that writes now;
-- `gen`, how many definitions were adopted; for each definition F it has
-- met, `def:F` (its text), `gen:F` (its generation: larger is newer) and
-- `seen:F` (until when, in server ms, a process running F may write without
-- announcing itself again); for each index, `index:<field>`, "<kind> <state>"
-- with state `ready`, `building` or `dropping`; `drop:<field>`, the old kind
-- of an index whose kind changed, whose keys are still to delete; `walk`,
-- the progress of `schema apply`.
--
-- KEYS[1]: the record. ARGV[1]: the mode; ARGV[2]: the caller's fingerprint.
--   use    (or use-evicting, from a store that accepts a maxmemory-policy
--          evicting any key; `use` answers `evicting` to such a policy,
--          writing nothing) ARGV[3] its text, ARGV[4] its heartbeat (ms), ARGV[5..] the
--          "<field> <kind>" of its indexes, ready when the type has no
--          record yet (its first write records it)
--   adopt  ARGV[3] text, ARGV[4] heartbeat, ARGV[5] the current definition
--          the caller compared itself with, ARGV[6..] field, value pairs
--          of index states to set
--   step   ARGV[3] the walk's progress
--   finish ARGV[3] the walk's start (ms), ARGV[4] n, ARGV[5..4+n] the
--          definitions that must not have written since it, then field,
--          value pairs to set ('' deletes the field)
-- Flagged allow-oom: the announcement before a delete must pass when the
-- server is at its maxmemory (it writes a few bytes of the record), so that
-- memory can be freed through the library; the write after it is refused
-- there unless it only removes.
-- Returns {status, server ms, the server's maxmemory-policy (mode `use`,
-- '' when INFO is not allowed), the record's fields and values...}: status
-- `recorded`, `known`, `new` (the caller is a definition the record has not
-- met: it compares and adopts), `adopted`, `moved` (another definition was
-- adopted since the caller read: read again), `stepped`, `wait` (a
-- definition in ARGV wrote since the walk started) or `done`.
local rec, mode, fp = KEYS[1], ARGV[1], ARGV[2]
local eviction_allowed = mode == 'use-evicting'
if eviction_allowed then mode = 'use' end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Read with every announcement, so that a store notices a policy changed
-- since its first write (a restart, a failover, CONFIG SET) without a round
-- trip of its own. A user without INFO (`-@dangerous`) gets ''.
local policy = ''
if mode == 'use' then policy = memory_policy() end

local function answer(status)
  local out = {status, tostring(now), policy}
  for _, v in ipairs(redis.call('HGETALL', rec)) do out[#out + 1] = v end
  return out
end

-- A process of `fp` may write until now + its heartbeat.
local function seen(heartbeat)
  local until_ms = now + tonumber(heartbeat)
  local old = tonumber(redis.call('HGET', rec, 'seen:' .. fp) or '0')
  if until_ms > old then redis.call('HSET', rec, 'seen:' .. fp, tostring(until_ms)) end
end

local function set_pairs(from)
  for i = from, #ARGV, 2 do
    if ARGV[i + 1] == '' then
      redis.call('HDEL', rec, ARGV[i])
    else
      redis.call('HSET', rec, ARGV[i], ARGV[i + 1])
    end
  end
end

local current = redis.call('HGET', rec, 'current')
if mode == 'use' then
  if not eviction_allowed and evicts_any_key(policy) then
    return {'evicting', tostring(now), policy}
  end
  if not current then
    redis.call('HSET', rec, 'current', fp, 'gen', '1', 'def:' .. fp, ARGV[3], 'gen:' .. fp, '1')
    for i = 5, #ARGV do
      local field, kind = string.match(ARGV[i], '^(%S+) (%S+)$')
      redis.call('HSET', rec, 'index:' .. field, kind .. ' ready')
    end
    seen(ARGV[4])
    return answer('recorded')
  end
  if current ~= fp and redis.call('HEXISTS', rec, 'gen:' .. fp) == 0 then
    return answer('new')
  end
  seen(ARGV[4])
  return answer('known')
end
if mode == 'adopt' then
  if current ~= ARGV[5] then return answer('moved') end
  local gen = redis.call('HINCRBY', rec, 'gen', 1)
  redis.call('HSET', rec, 'current', fp, 'def:' .. fp, ARGV[3], 'gen:' .. fp, tostring(gen))
  -- The set of indexes to build changed: a walk starts again.
  redis.call('HDEL', rec, 'walk')
  set_pairs(6)
  seen(ARGV[4])
  return answer('adopted')
end
if current ~= fp then return answer('moved') end
if mode == 'step' then
  redis.call('HSET', rec, 'walk', ARGV[3])
  return answer('stepped')
end
if mode == 'finish' then
  local started, n = tonumber(ARGV[3]), tonumber(ARGV[4])
  for i = 5, 4 + n do
    if tonumber(redis.call('HGET', rec, 'seen:' .. ARGV[i]) or '0') >= started then
      redis.call('HDEL', rec, 'walk')
      return answer('wait')
    end
  end
  set_pairs(5 + n)
  redis.call('HDEL', rec, 'walk')
  return answer('done')
end
return redis.error_reply('ERR unknown schema mode ' .. tostring(mode))
