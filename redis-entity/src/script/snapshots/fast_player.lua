-- The common write of Player in straight-line code (script/fast.rs).
local FAST_COLUMNS = { "name", "score" }
local FAST_SENT = { 1 }
local FAST_INDEX_COLUMN = { false }
local FAST_SHADOW = ":@shadow"
local FAST_ONE = { ["i."] = 1, ["f."] = -1, [".i"] = 2, [".f"] = -2, ["s."] = 1001 }
local function fast_change(K, A, f, last, mode)
  local rcall, rpcall = redis.call, redis.pcall
  local m = A[f]
  local a1 = A[f + 1]
  local ops = A[f + 2]
  local x = f + 3
  local ns = #ops > 2 and string.sub(ops, 3) or ''
  local ids = ns == '' and "player:@ids" or ns .. "player:@ids"
  if mode == 'update' and x == last then
    local one = FAST_ONE[ns == '' and ops or string.sub(ops, 1, 2)]
    if one then
      local pttl = rcall('PTTL', K[1])
      if pttl == -2 then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
      -- An entity with a TTL keeps a shadow: the general code.
      if pttl >= 0 then return nil end
      local err
      if one > 1000 then
        local field, v = FAST_COLUMNS[one - 1000], A[x]
        rcall('HSET', K[1], field, v)
        return 0
      end
      local j = one > 0 and one or -one
      local p1 = j == 2 and (ns == '' and "player:@score" or ns .. "player:@score")
      if p1 then err = wrong_type(p1, 'zset'); if err then return err end end
      local field, cmd = FAST_COLUMNS[j], one > 0 and 'HINCRBY' or 'HINCRBYFLOAT'
      local r = rpcall(cmd, K[1], field, A[x])
      if type(r) == 'table' and r.err then return fast_incr_error(K, { field, A[x], cmd }, r) end
      if p1 then r = fast_stored(r); if tonumber(r) then rcall('ZADD', p1, r, m) end end
      return 0
    end
  end
  local all = ops == "ss" or ns ~= '' and string.sub(ops, 1, 2) == "ss"
  local hs, hd, incf, incv, cmd
  if all then
    x = x + 2
  else
    local b1, b2
    b1, b2 = string.byte(ops, 1, 2)
    if b1 ~= 46 then
      if b1 == 115 then if hs then hs[#hs + 1] = "name"; hs[#hs + 1] = A[x] else hs = { "name", A[x] } end; x = x + 1
      elseif b1 == 100 then if hd then hd[#hd + 1] = "name" else hd = { "name" } end
      else
        cmd = b1 == 105 and 'HINCRBY' or 'HINCRBYFLOAT'
        if incf then return nil end; incf, incv = "name", A[x]; x = x + 1
      end
    end
    if b2 ~= 46 then
      if b2 == 115 then if hs then hs[#hs + 1] = "score"; hs[#hs + 1] = A[x] else hs = { "score", A[x] } end; x = x + 1
      elseif b2 == 100 then if hd then hd[#hd + 1] = "score" else hd = { "score" } end
      else
        cmd = b2 == 105 and 'HINCRBY' or 'HINCRBYFLOAT'
        if incf then return nil end; incf, incv = "score", A[x]; x = x + 1
      end
    end
  end
  if mode == 'update' and x > last and a1 == 'u' then
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
  local p1 = ns == '' and "player:@score" or ns .. "player:@score"
  if existed and mode ~= 'update' then
    local vs = rcall('HMGET', K[1], "score")
    o1 = vs[1] or false
  elseif existed then
    if not (a1 == 'u' or a1 == '') then o1 = rcall('HGET', K[1], "score") or false end
  end
  if a1 == 'u' then n1 = o1
  elseif a1 ~= 'n' and a1 ~= '' then n1 = string.sub(a1, 2) end
  local err
  if n1 ~= o1 or a1 == '' then
    err = wrong_type(p1, 'zset'); if err then return err end
  end
  local undo, r
  if not existed then
    local b = ids_bucket(ids, m)
    r = rpcall('SADD', b, m)
    if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(b, 'set') or r end
    if r == 1 then if undo then undo[#undo + 1] = 'SREM'; undo[#undo + 1] = b; undo[#undo + 1] = false else undo = { 'SREM', b, false } end end
    if r == 1 and b ~= ids and rcall('SCARD', b) == 1 then
      local d = ids_directory(ids)
      r = rpcall('SADD', d, string.sub(b, #ids + 2))
      if r ~= 0 and r ~= 1 then fast_undo(undo, m); return wrong_type(d, 'set') or r end
    end
  end
  -- The first write to the entity: an increment (its error caught), or HSET.
  if all then
    rcall('HSET', K[1], "name", A[x - 2], "score", A[x - 1])
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
  if a1 == '' then
    n1 = incf == "score" and fast_stored(incv) or rcall('HGET', K[1], "score")
  end
  if n1 ~= o1 then
    if n1 then
      if tonumber(n1) then rcall('ZADD', p1, n1, m) end
    elseif o1 then rcall('ZREM', p1, m) end
  end
  if existed then return 0 end
  return 1
end
