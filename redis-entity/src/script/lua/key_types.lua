-- `wrong_type(key, t)`: the error a write returns, before its first write,
-- when `key` holds another Redis type than `t` (set, string, zset, hash,
-- list): `WRONGTYPE_KEY <found> <wanted> <key>`, which the runtime turns
-- into `Error::WrongType` naming that key; nil when the key is of type `t`
-- or absent. The cheapest command of each type that fails on a key of
-- another type (and answers an integer, which costs less to hand to Lua
-- than TYPE's status reply).
local PROBE = { set = 'SCARD', string = 'STRLEN', zset = 'ZCARD', hash = 'HLEN', list = 'LLEN' }
local function wrong_type(key, t)
  local r = redis.pcall(PROBE[t], key)
  if type(r) == 'table' and r.err then
    return redis.error_reply('WRONGTYPE_KEY ' .. redis.call('TYPE', key).ok .. ' ' .. t .. ' ' .. key)
  end
  return nil
end

-- The first of `list` (pairs of key and type) that holds another type.
local function wrong_types(list)
  for _, kt in ipairs(list) do
    local err = wrong_type(kt[1], kt[2])
    if err then return err end
  end
  return nil
end
