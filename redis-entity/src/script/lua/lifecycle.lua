-- Body: expire (give every key the TTL) or persist (remove it) an existing
-- entity; the shadow and the expiry set follow.
local function lifecycle(keys, args, first, last, expire)
  local w = begin(keys, args, first)
  if not w.existed then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
  for i = 1, #w.K do
    if role(i) ~= 'o' and role(i) ~= 's' then
      if expire then redis.call('Pexpire', w.K[i], w.ttl) else redis.call('PERSIST', w.K[i]) end
    end
  end
  if expire then track_expiry(w, w.ttl, w.old) else track_expiry(w, -1, w.old) end
  return 1
end
