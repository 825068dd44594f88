#!lua flags=no-writes
-- redis-entity: the server's maxmemory-policy, for verify's report.
-- KEYS[1]: a key of the type (which node to ask, on a cluster).
-- Returns the policy, or false when the user may not run INFO.
local ok, info = pcall(redis.call, 'INFO', 'memory')
if not ok or type(info) ~= 'string' then return false end
return string.match(info, 'maxmemory_policy:([%w%-]+)') or false
