-- redis-entity: the server's maxmemory-policy, as the scripts that run
-- before a store's writes (layout.lua, schema.lua) and verify's read of it
-- (read_memory_policy.lua) see it; store/memory.rs says why it matters.

-- The policy, from INFO memory; '' when the user may not run INFO
-- (`-@dangerous`): then it cannot be known.
local function memory_policy()
  local ok, info = pcall(redis.call, 'INFO', 'memory')
  if not ok or type(info) ~= 'string' then return '' end
  return string.match(info, 'maxmemory_policy:([%w%-]+)') or ''
end

-- True for a policy under which the server may evict any key at its memory
-- limit (allkeys-lru, allkeys-lfu, allkeys-random): index entries, unique
-- values and schema records could go while their entities stay.
local function evicts_any_key(policy)
  return string.find(policy, '^allkeys%-') ~= nil
end
