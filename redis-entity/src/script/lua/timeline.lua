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
for i = 1, #KEYS do
  local refused = wrong_type(KEYS[i], (i % 2 == 1) and 'list' or 'hash')
  if refused then return refused end
end
if ARGV[1] == 'check' then return 0 end
for i = 1, #KEYS, 2 do
  redis.call('LPUSH', KEYS[i], ARGV[2])
  redis.call('LTRIM', KEYS[i], 0, ARGV[3])
  redis.call('HSET', KEYS[i + 1], ARGV[4], ARGV[5])
end
return #KEYS / 2
