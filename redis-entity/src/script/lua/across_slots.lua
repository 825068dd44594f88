-- The calls of one script in several slots of one cluster node, run as one
-- call (`allow-cross-slot-keys`: the server refuses a key that node does not
-- serve, "Script attempted to access a non local key", and the caller falls
-- back to one call per slot).
-- KEYS: the first call's keys (they route the call to its node).
-- ARGV: the call count; per call its key count, its argument count, its keys,
--       then its arguments.
-- Returns: each call's reply, in order.
local replies, p = {}, 2
for i = 1, tonumber(ARGV[1]) do
  local nk, na = tonumber(ARGV[p]), tonumber(ARGV[p + 1])
  p = p + 2
  local keys, args = {}, {}
  for j = 1, nk do keys[j] = ARGV[p]; p = p + 1 end
  for j = 1, na do args[j] = ARGV[p]; p = p + 1 end
  replies[i] = one(keys, args)
end
return replies
