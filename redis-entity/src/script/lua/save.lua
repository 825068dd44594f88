-- Body: save (upsert) or insert (refuses an entity that exists) of one entity.
local function run(keys, first, last)
  begin(keys, first)
  if INSERT and existed then return redis.error_reply('ENTITY_EXISTS entity already stored') end
  return change(last, false)
end
