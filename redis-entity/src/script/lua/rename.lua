-- redis-entity: fields renamed by a definition (`#[redis(alias = "old")]`),
-- rewritten under their new names by `schema apply`.
--
-- KEYS: entity hashes (one page of a walk, in one slot).
-- ARGV: old name, new name, old name, new name, ...
-- A value already stored under the new name wins (a write of the new
-- definition since); the old field goes either way. A key that is not a
-- hash (gone, or not an entity) is skipped. Returns how many fields moved.
local moved = 0
for _, key in ipairs(KEYS) do
  if redis.call('TYPE', key).ok == 'hash' then
    for i = 1, #ARGV, 2 do
      local v = redis.call('HGET', key, ARGV[i])
      if v then
        if redis.call('HEXISTS', key, ARGV[i + 1]) == 0 then
          redis.call('HSET', key, ARGV[i + 1], v)
        end
        redis.call('HDEL', key, ARGV[i])
        moved = moved + 1
      end
    end
  end
end
return moved
