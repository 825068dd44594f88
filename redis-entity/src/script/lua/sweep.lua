-- Body: unindex the entity if it has expired (its shadow lists its entries);
-- a live one only has its place in the expiry set refreshed.
local function sweep(keys, args, first, last)
  begin(keys, args, first)
  if existed then
    track_expiry(old_pttl, old)
    return 0
  end
  local refused = check_key_types(false, 'all', true) or check_relation_types()
  if refused then return refused end
  unindex_all()
  local away = unrelate_all()
  if shadow then redis.call('DEL', shadow) end
  if expiry_here() then redis.call('ZREM', expiry_key, member) end
  return with_away(1, away)
end
