#!lua flags=no-writes,allow-cross-slot-keys
-- redis-entity: plain reads of keys in several slots of one cluster node, in
-- one call (a cluster connection refuses a pipeline across slots). The
-- server refuses a key its node does not serve ("non local key"), and the
-- caller then reads one slot at a time.
-- KEYS[1]: a key of the first read (it routes the call to its node).
-- ARGV: per read command its word count, then its words (the name first).
-- Returns: each command's reply in order, an error in its place as the
-- error it is (as a pipeline that ignores errors answers).
local replies, p = {}, 1
while p <= #ARGV do
  local n = tonumber(ARGV[p])
  replies[#replies + 1] = redis.pcall(unpack(ARGV, p + 1, p + n))
  p = p + n + 1
end
return replies
