-- The common write of Order in straight-line code (script/fast.rs).
local FAST_COLUMNS = { "status" }
local FAST_SENT = { 1 }
local FAST_INDEX_COLUMN = { false, 1 }
local FAST_SHADOW = ":@shadow"
local function fast_change(K, A, f, last, mode)
  local ns, m = A[f], A[f + 1]
  local a1 = A[f + 2]
  local ops = A[f + 3]
  local x = f + 4
  local hs, hd, inc = {}, {}, {}
  local s, v
  local op1, val1 = string.byte(ops, 1), false
  if op1 ~= 46 then
    if op1 == 115 then val1 = A[x]; x = x + 1; hs[#hs + 1] = "status"; hs[#hs + 1] = val1
    elseif op1 == 100 then hd[#hd + 1] = "status"
    else inc[#inc + 1] = "status"; inc[#inc + 1] = A[x]; inc[#inc + 1] = op1; x = x + 1 end
  end
  if (op1 == 105 or op1 == 102) then return nil end
  if not fast_tail_ok(A, x, last) then return nil end
  local pttl = redis.call('PTTL', K[1])
  -- An entity with a TTL keeps a shadow: the general code.
  if pttl >= 0 then return nil end
  local existed = pttl == -1
  if existed then
    if mode == 'insert' then return redis.error_reply('ENTITY_EXISTS entity already stored') end
  else
    if mode == 'update' then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
    -- Expired leaving a shadow: the general code.
    if redis.call('EXISTS', K[1] .. FAST_SHADOW) == 1 then return nil end
  end
  local o1, n1 = false, false
  local p1 = ns .. "order:@shop:"
  local o2, n2 = false, false
  local p2 = ns .. "order:@status:"
  if existed and (not (op1 == 46)) then
    local vs = redis.call('HMGET', K[1], "status")
    o2 = vs[1] or false
  end
  n1 = string.sub(a1, 2)
  if existed then o1 = n1 end
  if op1 == 46 then n2 = o2
  elseif op1 == 115 then n2 = val1 end
  local err = fast_check_incr(K, inc)
  if err then return err end
  if not existed then
    err = wrong_type(ns .. "order:@ids", 'set')
    if err then return err end
  end
  local ko1, kn1, ow1, nw1 = false, false, false, false
  if n1 ~= o1 then
    if o1 then
      ko1 = p1 .. o1
      err = wrong_type(ko1, 'set')
      if err then return err end
    end
    if n1 then
      kn1 = p1 .. n1
      err = wrong_type(kn1, 'set')
      if err then return err end
    end
  end
  local ko2, kn2, ow2, nw2 = false, false, false, false
  if n2 ~= o2 then
    if o2 then
      ko2 = p2 .. esc(o2)
      err = wrong_type(ko2, 'set')
      if err then return err end
    end
    if n2 then
      kn2 = p2 .. esc(n2)
      err = wrong_type(kn2, 'set')
      if err then return err end
    end
  end
  -- The first write: an increment (its error caught), or HSET.
  local got
  if #inc > 0 then
    got, err = fast_incr(K, inc)
    if not got then return err end
  end
  if #hs > 0 then redis.call('HSET', K[1], unpack(hs)) end
  if #hd > 0 then redis.call('HDEL', K[1], unpack(hd)) end
  fast_tail(K, A, x, last)
  if n1 ~= o1 then
    if o1 then redis.call('SREM', ko1, m) end
    if n1 then redis.call('SADD', kn1, m) end
  end
  if n2 ~= o2 then
    if o2 then redis.call('SREM', ko2, m) end
    if n2 then redis.call('SADD', kn2, m) end
  end
  if not existed then redis.call('SADD', ns .. "order:@ids", m) end
  if existed then return 0 end
  return 1
end
