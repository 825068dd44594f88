-- Body: expire (give every key the TTL) or persist (remove it) an existing
-- entity; the shadow and the expiry set follow.
local function lifecycle(keys, args, first, last, expire)
  begin(keys, args, first)
  if not existed then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
  for i = 1, #K do
    if role(i) ~= 'o' and role(i) ~= 's' then
      if expire then redis.call('Pexpire', K[i], ttl) else redis.call('PERSIST', K[i]) end
    end
  end
  if expire then track_expiry(ttl, old) else track_expiry(-1, old) end
  return 1
end
