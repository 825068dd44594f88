#!lua flags=no-writes
-- redis-entity: the 0-based rank of a member in a sorted index, highest score
-- first, counting only entities that still exist.
-- KEYS[1]: the sorted index; KEYS[2]: the expiry set of the type
-- ARGV[1]: the member; ARGV[2]: owner head; ARGV[3..]: presence suffixes
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not r then return false end
if redis.call('ZCARD', KEYS[2]) == 0 then return r end
local function alive(m)
  for j = 3, #ARGV do
    if redis.call('EXISTS', ARGV[2] .. m .. ARGV[j]) == 1 then return true end
  end
  return false
end
if not alive(ARGV[1]) then return false end
if r == 0 then return 0 end
-- The members ahead, a chunk at a time: one whose expiry time has passed
-- (one ZMSCORE per chunk) is not counted without further look; the others
-- are checked to exist.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = 0
for start = 0, r - 1, 256 do
  local members = redis.call('ZREVRANGE', KEYS[1], start, math.min(start + 255, r - 1))
  local expires = redis.call('ZMSCORE', KEYS[2], unpack(members))
  for j, m in ipairs(members) do
    local at = expires[j] and tonumber(expires[j])
    if not (at and at <= now) and alive(m) then live = live + 1 end
  end
end
return live
