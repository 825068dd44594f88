#!lua flags=no-writes
-- redis-entity: the server's maxmemory-policy, for verify's report.
-- KEYS[1]: a key of the type (which node to ask, on a cluster).
-- Returns the policy, or false when the user may not run INFO.
local policy = memory_policy()
if policy == '' then return false end
return policy
