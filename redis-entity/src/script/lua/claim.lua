-- redis-entity: the owner key of one unique value of a type of many index
-- shards on a cluster, in the value's own slot.
--
-- KEYS[1]: the owner key, a hash: `owner` (the member holding the value, or
--          claiming it for a write under way) and `at` (when it was claimed,
--          ms of the server's clock)
-- ARGV: mode, member, and for 'takeover' the owner found before
-- - 'claim': a free value is claimed ({'granted'}); one the member owns
--   already is {'mine'}; otherwise {'held', owner, age of its claim in ms}.
-- - 'takeover': the claim of an owner that was found not to hold the value
--   goes to the member, if that owner still has it ({'granted'}), else as
--   'claim' reports.
-- - 'release': the member's claim goes (1), another's stays (0).
local mode, member = ARGV[1], ARGV[2]
local owner = redis.call('HGET', KEYS[1], 'owner')
if mode == 'release' then
  if owner == member then return redis.call('DEL', KEYS[1]) end
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not owner or (mode == 'takeover' and owner == ARGV[3]) then
  redis.call('HSET', KEYS[1], 'owner', member, 'at', now)
  return { 'granted' }
end
if owner == member then return { 'mine' } end
local at = tonumber(redis.call('HGET', KEYS[1], 'at') or '0') or 0
return { 'held', owner, tostring(now - at) }
