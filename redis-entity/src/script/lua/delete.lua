-- Body: delete the entity, every index entry and both sides of its relations.
local function delete(keys, args, first, last)
  begin(keys, args, first)
  local was_tracked = tracked()
  local refused = check_key_types(false, 'all', was_tracked)
  if refused then return refused end
  unindex_all()
  unrelate_all()
  redis.call('DEL', unpack(K))
  if was_tracked then redis.call('ZREM', expiry_key, member) end
  if existed then return 1 end
  return 0
end
