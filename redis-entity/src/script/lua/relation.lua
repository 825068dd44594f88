-- redis-entity: relate or unrelate two entities, both sides in one step.
--
-- KEYS[1]: the forward set of a (`<a key>:<name>`, members of b's type)
-- KEYS[2]: the reverse set of b (`<b key>:<reverse>`, members of a's type)
-- KEYS[3], KEYS[4]: the relation registers of a and b (`<key>:@rel`): per
--          relation set, how to find the sets on the other side, so that
--          deleting (or sweeping an expired) entity removes it everywhere
-- ARGV: mode (relate | unrelate), a's member, b's member, name, reverse,
--       a's register entry, b's register entry, '1' for one-to-many
--       (b has at most one a), a's type head and tail, then for a and for b:
--       the entity key and the expiry set of its type (an entity with a TTL
--       is listed there, so that a sweep can take it out of its relations)
--
-- On a cluster, two sides in two slots are written one side per call:
-- mode 'add' (KEYS[1]: the side's set, KEYS[2]: its register; ARGV: mode,
-- the member to add, the set's name, its register entry, '1' to take the
-- set over (one-to-many: the other members leave it and are returned), the
-- side's entity key, which must exist, its type's expiry set ('' when in
-- another slot), the side's own member) returns {added, members that
-- left...}; mode 'drop' (KEYS as for 'add'; ARGV: mode, member, the set's
-- name) removes one member and returns how many went.
local mode = ARGV[1]

-- Every key a call writes is checked before the first write (`wrong_types`,
-- lua/key_types.lua): a key of the wrong type fails the call with nothing
-- written, naming that key, instead of half-way through. The keys and
-- arguments of relate and unrelate: lua/steps.lua.

if mode == 'drop' then
  local refused = wrong_types({ { KEYS[1], 'set' }, { KEYS[2], 'hash' } })
  if refused then return refused end
  local removed = redis.call('SREM', KEYS[1], ARGV[2])
  if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HDEL', KEYS[2], ARGV[3]) end
  return removed
end
if mode == 'add' then
  local other, name, entry, take, key, expiry, own = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
  if redis.call('EXISTS', key) == 0 then return redis.error_reply('ENTITY_NOT_FOUND ' .. own) end
  local pttl = redis.call('PTTL', key)
  local touched = { { KEYS[1], 'set' }, { KEYS[2], 'hash' } }
  if pttl > 0 and expiry ~= '' then touched[3] = { expiry, 'zset' } end
  local refused = wrong_types(touched)
  if refused then return refused end
  local out = { 0 }
  if take == '1' then
    for _, old in ipairs(redis.call('SMEMBERS', KEYS[1])) do
      if old ~= other then
        redis.call('SREM', KEYS[1], old)
        out[#out + 1] = old
      end
    end
  end
  out[1] = redis.call('SADD', KEYS[1], other)
  redis.call('HSET', KEYS[2], name, entry)
  if pttl > 0 and expiry ~= '' then
    local t = redis.call('TIME')
    redis.call('ZADD', expiry, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + pttl, own)
  end
  return out
end
-- relate | unrelate: relation_fns.lua, before this script.
local state = {}
local function exists(key) return redis.call('EXISTS', key) == 1 end
local refused = relation_check(KEYS, ARGV, 0, state, exists)
if refused then return refused end
return relation_apply(KEYS, ARGV, 0, state)
