-- Body: save (upsert) or insert (refuses an entity that exists) of one entity.
local function save(keys, args, first, last, insert)
  local w = begin(keys, args, first)
  if insert and w.existed then return redis.error_reply('ENTITY_EXISTS entity already stored') end
  return change(w, last, false)
end
