-- The common write of Order in straight-line code (script/fast.rs).
local FAST_COLUMNS = { "status" }
local FAST_SENT = { 1 }
local FAST_INDEX_COLUMN = { false, 1 }
local FAST_SHADOW = ":@shadow"
local FAST_ONE = { ["s"] = 1001 }
local function fast_change(K, A, f, last, mode)
  local rcall, rpcall = redis.call, redis.pcall
  local m = A[f]
  local a1 = A[f + 1]
  local ops = A[f + 2]
  local x = f + 3
  local ns = #ops > 1 and string.sub(ops, 2) or ''
  local ids = ns == '' and "order:@ids" or ns .. "order:@ids"
  if mode == 'update' and x == last then
    local one = FAST_ONE[ns == '' and ops or string.sub(ops, 1, 1)]
    if one then
      local pttl = rcall('PTTL', K[1])
      if pttl == -2 then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
      -- An entity with a TTL keeps a shadow: the general code.
      if pttl >= 0 then return nil end
      local err
      if one > 1000 then
        local field, v = FAST_COLUMNS[one - 1000], A[x]
        local p = one == 1001 and (ns == '' and "order:@status:" or ns .. "order:@status:") or false
        local o = p and rcall('HGET', K[1], field)
        if p and o ~= v then
          local kn, r = p .. esc(v), nil
          if o then
            local ko = p .. esc(o)
            r = rpcall('SMOVE', ko, kn, m)
            if r ~= 0 and r ~= 1 then return wrong_type(ko, 'set') or wrong_type(kn, 'set') or r end
          end
          if r ~= 1 then
            r = rpcall('SADD', kn, m)
            if r ~= 0 and r ~= 1 then return wrong_type(kn, 'set') or r end
          end
        end
        rcall('HSET', K[1], field, v)
        return 0
      end
    end
  end
  local all = ops == "s" or ns ~= '' and string.sub(ops, 1, 1) == "s"
  local hs, hd, incf, incv, cmd
  local op1, val1 = 115, false
  if all then
    val1 = A[x + 0]
    x = x + 1
  else
    op1 = string.byte(ops, 1, 1)
    if op1 ~= 46 then
      if op1 == 115 then val1 = A[x]; if hs then hs[#hs + 1] = "status"; hs[#hs + 1] = val1 else hs = { "status", val1 } end; x = x + 1
      elseif op1 == 100 then if hd then hd[#hd + 1] = "status" else hd = { "status" } end
      else
        return nil
      end
    end
  end
  if mode == 'update' and x > last and op1 == 46 then
    local pttl = rcall('PTTL', K[1])
    if pttl == -2 then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
    -- An entity with a TTL keeps a shadow: the general code.
    if pttl >= 0 then return nil end
    local err
    local r
    if incf then
      r = rpcall(cmd, K[1], incf, incv)
      if type(r) == 'table' and r.err then return fast_incr_error(K, { incf, incv, cmd }, r) end
      incv = r
    end
    if hs and #hs == 2 then rcall('HSET', K[1], hs[1], hs[2])
    elseif hs then rcall('HSET', K[1], unpack(hs)) end
    if hd then rcall('HDEL', K[1], unpack(hd)) end
    return 0
  end
  if x <= last and not fast_tail_ok(A, x, last) then return nil end
  local pttl = rcall('PTTL', K[1])
  -- An entity with a TTL keeps a shadow: the general code.
  if pttl >= 0 then return nil end
  local existed = pttl == -1
  if existed then
    if mode == 'insert' then return redis.error_reply('ENTITY_EXISTS entity already stored') end
  else
    if mode == 'update' then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
    -- Expired leaving a shadow: the general code.
    if rcall('EXISTS', K[1] .. FAST_SHADOW) == 1 then return nil end
  end
  local o1, n1 = false, false
  local p1 = ns == '' and "order:@shop:" or ns .. "order:@shop:"
  local o2, n2 = false, false
  local p2 = ns == '' and "order:@status:" or ns .. "order:@status:"
  if existed and mode ~= 'update' then
    local vs = rcall('HMGET', K[1], "status")
    o2 = vs[1] or false
  elseif existed then
    if not (op1 == 46) then o2 = rcall('HGET', K[1], "status") or false end
  end
  n1 = string.sub(a1, 2)
  if existed then o1 = n1 end
  if op1 == 46 then n2 = o2
  elseif op1 == 115 then n2 = val1 end
  local err
  local ko1, kn1 = false, false
  if n1 ~= o1 then
    if o1 then
      ko1 = p1 .. o1
    end
    if n1 then
      kn1 = p1 .. n1
    end
  end
  local ko2, kn2 = false, false
  if n2 ~= o2 then
    if o2 then
      ko2 = p2 .. esc(o2)
    end
    if n2 then
      kn2 = p2 .. esc(n2)
    end
  end
  local undo, r
  if n1 ~= o1 then
    if o1 and n1 then
      r = rpcall('SMOVE', ko1, kn1, m)
      if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(ko1, 'set') or wrong_type(kn1, 'set') or r end
      if r == 1 then if undo then undo[#undo + 1] = 'SMOVE'; undo[#undo + 1] = kn1; undo[#undo + 1] = ko1 else undo = { 'SMOVE', kn1, ko1 } end
      else
        r = rpcall('SADD', kn1, m)
        if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(kn1, 'set') or r end
        if r == 1 then if undo then undo[#undo + 1] = 'SREM'; undo[#undo + 1] = kn1; undo[#undo + 1] = false else undo = { 'SREM', kn1, false } end end
      end
    elseif o1 then
      r = rpcall('SREM', ko1, m)
      if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(ko1, 'set') or r end
      if r == 1 then if undo then undo[#undo + 1] = 'SADD'; undo[#undo + 1] = ko1; undo[#undo + 1] = false else undo = { 'SADD', ko1, false } end end
    else
      r = rpcall('SADD', kn1, m)
      if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(kn1, 'set') or r end
      if r == 1 then if undo then undo[#undo + 1] = 'SREM'; undo[#undo + 1] = kn1; undo[#undo + 1] = false else undo = { 'SREM', kn1, false } end end
    end
  end
  if n2 ~= o2 then
    if o2 and n2 then
      r = rpcall('SMOVE', ko2, kn2, m)
      if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(ko2, 'set') or wrong_type(kn2, 'set') or r end
      if r == 1 then if undo then undo[#undo + 1] = 'SMOVE'; undo[#undo + 1] = kn2; undo[#undo + 1] = ko2 else undo = { 'SMOVE', kn2, ko2 } end
      else
        r = rpcall('SADD', kn2, m)
        if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(kn2, 'set') or r end
        if r == 1 then if undo then undo[#undo + 1] = 'SREM'; undo[#undo + 1] = kn2; undo[#undo + 1] = false else undo = { 'SREM', kn2, false } end end
      end
    elseif o2 then
      r = rpcall('SREM', ko2, m)
      if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(ko2, 'set') or r end
      if r == 1 then if undo then undo[#undo + 1] = 'SADD'; undo[#undo + 1] = ko2; undo[#undo + 1] = false else undo = { 'SADD', ko2, false } end end
    else
      r = rpcall('SADD', kn2, m)
      if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(kn2, 'set') or r end
      if r == 1 then if undo then undo[#undo + 1] = 'SREM'; undo[#undo + 1] = kn2; undo[#undo + 1] = false else undo = { 'SREM', kn2, false } end end
    end
  end
  if not existed then
    r = rpcall('SADD', ids, m)
    if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(ids, 'set') or r end
    if r == 1 then if undo then undo[#undo + 1] = 'SREM'; undo[#undo + 1] = ids; undo[#undo + 1] = false else undo = { 'SREM', ids, false } end end
  end
  -- The first write to the entity: an increment (its error caught), or HSET.
  if all then
    rcall('HSET', K[1], "status", A[x - 1])
  else
    if incf then
      r = rpcall(cmd, K[1], incf, incv)
      if type(r) == 'table' and r.err then fast_undo(undo, m); return fast_incr_error(K, { incf, incv, cmd }, r) end
      incv = r
    end
    if hs and #hs == 2 then rcall('HSET', K[1], hs[1], hs[2])
    elseif hs then rcall('HSET', K[1], unpack(hs)) end
    if hd then rcall('HDEL', K[1], unpack(hd)) end
  end
  if x <= last then fast_tail(K, A, x, last) end
  if existed then return 0 end
  return 1
end
