-- The common write of User in straight-line code (script/fast.rs).
local FAST_COLUMNS = { "username", "country", "rating", "email", "version", "tags" }
local FAST_SENT = { 3 }
local FAST_INDEX_COLUMN = { 1, 2, false, 4, 6 }
local FAST_SHADOW = ":@shadow"
local function fast_unit(K, A, f, last, mode, u, first)
  local rcall, rpcall = redis.call, redis.pcall
  local m = A[f]
  local a3 = A[f + 1]
  local ops = A[f + 2]
  local x = f + 3
  local ns = #ops > 6 and string.sub(ops, 7) or ''
  local ids = ns == '' and "user:@ids" or ns .. "user:@ids"
  local all = ops == "ssssss" or ns ~= '' and string.sub(ops, 1, 6) == "ssssss"
  local hs, hd, inc, cmd
  local op1, val1 = 115, false
  local op2, val2 = 115, false
  local op4, val4 = 115, false
  local op6, val6 = 115, false
  if all then
    val1 = A[x + 0]
    val2 = A[x + 1]
    val4 = A[x + 3]
    val6 = A[x + 5]
    x = x + 6
  else
    local b3, b5
    op1, op2, b3, op4, b5, op6 = string.byte(ops, 1, 6)
    if op1 ~= 46 then
      if op1 == 115 then val1 = A[x]; if hs then hs[#hs + 1] = "username"; hs[#hs + 1] = val1 else hs = { "username", val1 } end; x = x + 1
      elseif op1 == 100 then if hd then hd[#hd + 1] = "username" else hd = { "username" } end
      else
        return nil
      end
    end
    if op2 ~= 46 then
      if op2 == 115 then val2 = A[x]; if hs then hs[#hs + 1] = "country"; hs[#hs + 1] = val2 else hs = { "country", val2 } end; x = x + 1
      elseif op2 == 100 then if hd then hd[#hd + 1] = "country" else hd = { "country" } end
      else
        return nil
      end
    end
    if b3 ~= 46 then
      if b3 == 115 then if hs then hs[#hs + 1] = "rating"; hs[#hs + 1] = A[x] else hs = { "rating", A[x] } end; x = x + 1
      elseif b3 == 100 then if hd then hd[#hd + 1] = "rating" else hd = { "rating" } end
      else
        cmd = b3 == 105 and 'HINCRBY' or 'HINCRBYFLOAT'
        if inc then inc[#inc + 1] = "rating"; inc[#inc + 1] = A[x]; inc[#inc + 1] = cmd else inc = { "rating", A[x], cmd } end; x = x + 1
      end
    end
    if op4 ~= 46 then
      if op4 == 115 then val4 = A[x]; if hs then hs[#hs + 1] = "email"; hs[#hs + 1] = val4 else hs = { "email", val4 } end; x = x + 1
      elseif op4 == 100 then if hd then hd[#hd + 1] = "email" else hd = { "email" } end
      else
        cmd = op4 == 105 and 'HINCRBY' or 'HINCRBYFLOAT'
        if inc then inc[#inc + 1] = "email"; inc[#inc + 1] = A[x]; inc[#inc + 1] = cmd else inc = { "email", A[x], cmd } end; x = x + 1
      end
    end
    if b5 ~= 46 then
      if b5 == 115 then if hs then hs[#hs + 1] = "version"; hs[#hs + 1] = A[x] else hs = { "version", A[x] } end; x = x + 1
      elseif b5 == 100 then if hd then hd[#hd + 1] = "version" else hd = { "version" } end
      else
        cmd = b5 == 105 and 'HINCRBY' or 'HINCRBYFLOAT'
        if inc then inc[#inc + 1] = "version"; inc[#inc + 1] = A[x]; inc[#inc + 1] = cmd else inc = { "version", A[x], cmd } end; x = x + 1
      end
    end
    if op6 ~= 46 then
      if op6 == 115 then val6 = A[x]; if hs then hs[#hs + 1] = "tags"; hs[#hs + 1] = val6 else hs = { "tags", val6 } end; x = x + 1
      elseif op6 == 100 then if hd then hd[#hd + 1] = "tags" else hd = { "tags" } end
      else
        return nil
      end
    end
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
  local p1 = ns == '' and "user:@username:" or ns .. "user:@username:"
  local o2, n2 = false, false
  local p2 = ns == '' and "user:@country:" or ns .. "user:@country:"
  local o3, n3 = false, false
  local p3 = ns == '' and "user:@rating" or ns .. "user:@rating"
  local o4, n4 = false, false
  local p4 = ns == '' and "user:@email" or ns .. "user:@email"
  local o5, n5 = false, false
  local p5 = ns == '' and "user:@tags:" or ns .. "user:@tags:"
  if existed and mode ~= 'update' then
    local vs = rcall('HMGET', K[1], "username", "country", "rating", "email", "tags")
    o1 = vs[1] or false
    o2 = vs[2] or false
    o3 = vs[3] or false
    o4 = vs[4] or false
    o5 = vs[5] or false
  elseif existed then
    if not (op1 == 46) then o1 = rcall('HGET', K[1], "username") or false end
    if not (op2 == 46) then o2 = rcall('HGET', K[1], "country") or false end
    if not (a3 == 'u' or a3 == '') then o3 = rcall('HGET', K[1], "rating") or false end
    if not (op4 == 46) then o4 = rcall('HGET', K[1], "email") or false end
    if not (op6 == 46) then o5 = rcall('HGET', K[1], "tags") or false end
  end
  if op1 == 46 then n1 = o1
  elseif op1 == 115 then n1 = val1 end
  if op2 == 46 then n2 = o2
  elseif op2 == 115 then n2 = val2 end
  if a3 == 'u' then n3 = o3
  elseif a3 ~= 'n' and a3 ~= '' then n3 = string.sub(a3, 2) end
  if op4 == 46 then n4 = o4
  elseif op4 == 115 then n4 = val4 end
  if op6 == 46 then n5 = o5
  elseif op6 == 115 then n5 = val6 end
  local err
  if inc then
    err = fast_check_incr(K, inc, first and 4 or 1)
    if err then return err end
  end
  err = wrong_type(K[2], 'hash')
  if err then return err end
  if not existed then
    err = wrong_type(ids_bucket(ids, m), 'set') or wrong_type(ids_directory(ids), 'set')
    if err then return err end
  end
  local ko1, kn1, ow1, nw1 = false, false, false, false
  if n1 ~= o1 then
    if o1 then
      ko1 = p1 .. esc(o1)
      ow1, err = fast_owner(ko1)
      if err then return err end
    end
    if n1 then
      kn1 = p1 .. esc(n1)
      nw1, err = fast_owner(kn1)
      if err then return err end
    end
  end
  local ko2, kn2 = false, false
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
  if n3 ~= o3 or a3 == '' then
    err = wrong_type(p3, 'zset'); if err then return err end
  end
  if n4 ~= o4 or (op4 == 105 or op4 == 102) then
    err = wrong_type(p4, 'zset'); if err then return err end
  end
  local to5, tn5
  if n5 ~= o5 then
    to5, tn5 = fast_tags(o5), fast_tags(n5)
    for t in pairs(to5) do
      if not tn5[t] then err = wrong_type(p5 .. t, 'set'); if err then return err end end
    end
    for t in pairs(tn5) do
      if not to5[t] then err = wrong_type(p5 .. t, 'set'); if err then return err end end
    end
  end
  if n1 and n1 ~= o1 and nw1 and nw1 ~= m then
    if rcall('EXISTS', ns .. "user:" .. nw1) == 1 then
      return redis.error_reply('UNIQUE_VIOLATION 0')
    end
  end
  if n1 then
    local key = p1 .. esc(n1)
    local owner = u.unique[key]
    if owner and owner ~= m then return redis.error_reply('UNIQUE_VIOLATION 0') end
    u.unique[key] = m
  end
  if u.follow then u.exists[K[1]] = true end
  return { K, A, x, last, all, inc, hs, hd, existed, ids, m, o1, n1, ko1, kn1, ow1, o2, n2, ko2, kn2, o3, n3, p3, a3, o4, n4, p4, o5, n5, p5, to5, tn5, op4 }
end
local function fast_unit_write(st)
  local K, A, x, last, all, inc, hs, hd, existed, ids, m, o1, n1, ko1, kn1, ow1, o2, n2, ko2, kn2, o3, n3, p3, a3, o4, n4, p4, o5, n5, p5, to5, tn5, op4 = unpack(st, 1, 33)
  local rcall, err = redis.call, nil
  -- The first write to the entity: an increment (its error caught), or HSET.
  if all then
    rcall('HSET', K[1], "username", A[x - 6], "country", A[x - 5], "rating", A[x - 4], "email", A[x - 3], "version", A[x - 2], "tags", A[x - 1])
  else
    if inc then
      err = fast_incr(K, inc)
      if err then return err end
    end
    if hs and #hs == 2 then rcall('HSET', K[1], hs[1], hs[2])
    elseif hs then rcall('HSET', K[1], unpack(hs)) end
    if hd then rcall('HDEL', K[1], unpack(hd)) end
  end
  if x <= last then fast_tail(K, A, x, last) end
  if n1 ~= o1 then
    if o1 and ow1 == m then rcall('DEL', ko1) end
    if n1 then rcall('SET', kn1, m) end
  end
  if n2 ~= o2 then
    if o2 then rcall('SREM', ko2, m) end
    if n2 then rcall('SADD', kn2, m) end
  end
  if a3 == '' then
    n3 = fast_incremented(inc, "rating") or rcall('HGET', K[1], "rating")
  end
  if n3 ~= o3 then
    if n3 then
      if tonumber(n3) then rcall('ZADD', p3, n3, m) end
    elseif o3 then rcall('ZREM', p3, m) end
  end
  if (op4 == 105 or op4 == 102) then
    n4 = fast_incremented(inc, "email") or rcall('HGET', K[1], "email")
  end
  if n4 ~= o4 then
    if o4 then rcall('ZREM', p4, esc(o4) .. ':' .. m) end
    if n4 then rcall('ZADD', p4, 0, esc(n4) .. ':' .. m) end
  end
  if n5 ~= o5 then
    for t in pairs(to5) do if not tn5[t] then rcall('SREM', p5 .. t, m) end end
    for t in pairs(tn5) do if not to5[t] then rcall('SADD', p5 .. t, m) end end
  end
  if not existed then
    local b = ids_bucket(ids, m)
    if rcall('SADD', b, m) == 1 and b ~= ids and rcall('SCARD', b) == 1 then
      rcall('SADD', ids_directory(ids), string.sub(b, #ids + 2))
    end
  end
  if existed then return 0 end
  return 1
end
