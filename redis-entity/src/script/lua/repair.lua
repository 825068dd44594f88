-- redis-entity: remove what is left of an entity that is gone (repair).
--
-- KEYS[1]: the key whose existence means the entity exists
-- KEYS[2]: a relation set or timeline that lists it ('member'), or one of
--          its own keys left behind ('key')
-- KEYS[3]: for 'member', the register of KEYS[2]'s owner
-- ARGV: mode ('member' or 'key'), then for 'member' the member and the
--       set's name in the register
-- Mode 'gone' is 'member' without KEYS[1], for an entity in another slot
-- of a cluster, whose absence the client checked just before.
-- Nothing is removed while the entity exists: it may have been written
-- again since `verify` looked. Returns how many entries or keys went.
local listing, register = KEYS[2], KEYS[3]
if ARGV[1] == 'gone' then
  listing, register = KEYS[1], KEYS[2]
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
if ARGV[1] == 'key' then return redis.call('DEL', KEYS[2]) end
local kind = redis.call('TYPE', listing).ok
local removed = 0
if kind == 'set' then
  removed = redis.call('SREM', listing, ARGV[2])
elseif kind == 'list' then
  removed = redis.call('LREM', listing, 0, ARGV[2])
end
-- An emptied set or list leaves the register too, as unrelate does.
if removed > 0 and redis.call('EXISTS', listing) == 0 then
  redis.call('HDEL', register, ARGV[3])
end
return removed
