#!lua flags=allow-oom
-- redis-entity: the layout marker of a namespace, recorded with a store's
-- first write, and the server's memory policy, judged before anything is
-- written.
--
-- KEYS[1]: the marker, `<namespace>@redis-entity:layout` (a string).
-- ARGV[1]: the store's key layout (`standalone`, `cluster`); ARGV[2]: '1'
-- when the store accepts a policy that evicts any key.
-- Returns {status, the layout found ('' for none), the maxmemory-policy ('' when
-- the user may not run INFO)}: status `evicting` (the server may evict any
-- key and the store does not accept it: nothing written) or `marked` (the
-- marker holds the layout found, or the store's when there was none).
-- Flagged allow-oom: a store whose first write is a delete must be able to
-- mark at the memory limit; the marker is a few bytes, written once.
local policy = memory_policy()
if ARGV[2] ~= '1' and evicts_any_key(policy) then
  return {'evicting', '', policy}
end
local found = redis.call('GET', KEYS[1])
if not found then redis.call('SET', KEYS[1], ARGV[1]) end
return {'marked', found or '', policy}
