-- Body: unindex the entity if it has expired (its shadow lists its entries);
-- a live one only has its place in the expiry set refreshed.
local function sweep(keys, args, first, last)
  local w = begin(keys, args, first)
  if w.existed then
    track_expiry(w, w.old_pttl, w.old)
    return 0
  end
  local refused = check_key_types(w, false, 'all', true) or check_relation_types(w)
  if refused then return refused end
  unindex_all(w)
  local away = unrelate_all(w)
  if w.shadow then redis.call('DEL', w.shadow) end
  if expiry_here(w) then redis.call('ZREM', w.expiry_key, w.member) end
  return with_away(1, away)
end
