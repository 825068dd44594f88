-- Body: delete the entity, every index entry and both sides of its relations
-- (the sides in other slots of a cluster are returned for the client).
local function delete(keys, args, first, last)
  begin(keys, args, first)
  local was_tracked = tracked()
  local refused = check_key_types(false, 'all', was_tracked) or check_relation_types()
  if refused then return refused end
  unindex_all()
  local away = unrelate_all()
  redis.call('DEL', unpack(K))
  if was_tracked then redis.call('ZREM', expiry_key, member) end
  return with_away(existed and 1 or 0, away)
end
