-- redis-entity: push a post onto the timelines of many owners, capped.
--
-- KEYS: per owner, its timeline (a list) then its relation register (a hash).
-- ARGV: mode (push | check), the post's member, the last position kept
--       (cap - 1), the timeline's name, its register entry.
--
-- Every key is checked before the first write (lua/key_types.lua): a key of the wrong type
-- fails the call with nothing written, naming that key. Mode `check` only
-- checks (the client checks every batch of a push to many owners before it
-- writes the first).
-- (timeline_check, timeline_push: lua/steps.lua, before this script.)
local refused = timeline_check(KEYS)
if refused then return refused end
if ARGV[1] == 'check' then return 0 end
return timeline_push(KEYS, ARGV, 0)
