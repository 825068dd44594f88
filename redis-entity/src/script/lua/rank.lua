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
local live = 0
for _, m in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, r - 1)) do
  if alive(m) then live = live + 1 end
end
return live
