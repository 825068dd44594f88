-- redis-entity: push a post onto the timelines of many owners, capped.
--
-- KEYS: per owner, its timeline (a list) then its relation register (a hash).
-- ARGV: mode (push | check), the post's member, the last position kept
--       (cap - 1), the timeline's name, its register entry, the owners'
--       presence suffix.
--
-- Owners that do not exist are skipped; the reply is how many timelines
-- got the post. Every key written is checked before the first write
-- (lua/key_types.lua): a key of the wrong type fails the call with nothing
-- written, naming that key. Mode `check` only checks (the client checks
-- every batch of a push to many owners before it writes the first).
-- (timeline_owners, timeline_check, timeline_push: lua/steps.lua, before
-- this script.)
local live = timeline_owners(KEYS, ARGV, 0, function(key) return redis.call('EXISTS', key) == 1 end)
local refused = timeline_check(KEYS, live)
if refused then return refused end
if ARGV[1] == 'check' then return 0 end
return timeline_push(KEYS, ARGV, 0, live)
