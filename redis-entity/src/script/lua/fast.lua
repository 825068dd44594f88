-- redis-entity: what the straight-line write of a type (generated per type
-- by script/fast.rs, after this file) shares. The generated `fast_change`
-- runs the common write (save, insert or update of a hash-layout entity
-- without a TTL, request token, condition, version check or claim) with
-- the type's keys, fields and index kinds written in; this file holds only
-- what does not depend on the type. Nothing here keeps state between calls.

-- The data commands of the #[hash] maps a straight-line write runs, after
-- the entity hash's fields: anything else sends the write to the general
-- code, before any check.
local FAST_TAIL = { HSET = true, HDEL = true, HREPLACE = true }

-- Whether every data command from argument `i` to `last` is one of those.
local function fast_tail_ok(A, i, last)
  while i <= last do
    if not FAST_TAIL[A[i]] then return false end
    i = i + 3 + tonumber(A[i + 2])
  end
  return true
end

-- Runs the data commands from argument `i` to `last` (the prelude's
-- `hset` writes in chunks).
local function fast_tail(K, A, i, last)
  while i <= last do
    local op, key, n = A[i], K[tonumber(A[i + 1])], tonumber(A[i + 2])
    local f = i + 3
    if op == 'HREPLACE' then redis.call('UNLINK', key) end  -- freed in the background
    if op == 'HDEL' then
      redis.call('HDEL', key, unpack(A, f, f + n - 1))
    else
      hset(A, key, f, f + n - 1)
    end
    i = f + n
  end
end

-- Before the first write, the increments `inc` of the entity hash (field,
-- delta, command triples) from the triple at `from`: each stored value must
-- be a number of its kind. A unit's first operation starts at the second
-- (4): its first increment is the entity's first write, which fast_incr
-- runs catching its error. (The single write has at most one increment,
-- run the same way in its own code, and calls neither.)
local function fast_check_incr(K, inc, from)
  for t = from, #inc, 3 do
    local v = redis.call('HGET', K[1], inc[t])
    if not accepts_increment(inc[t + 2], v) then return not_a_number(1, inc[t], v) end
  end
  return nil
end

-- The error reply of the first increment of `inc`, which failed with `r`:
-- for a stored value that is not a number, the typed error; anything else
-- (a wrong type, an overflow) as Redis gave it.
local function fast_incr_error(K, inc, r)
  local v = redis.pcall('HGET', K[1], inc[1])
  if type(v) == 'string' and not accepts_increment(inc[3], v) then
    return not_a_number(1, inc[1], v)
  end
  return r
end

-- Runs the increments `inc`, each reply (the new value) kept in place of
-- its delta; nil, or the error reply of the first (then nothing was
-- written to the entity).
local function fast_incr(K, inc)
  for t = 1, #inc, 3 do
    if t == 1 then
      local r = redis.pcall(inc[3], K[1], inc[1], inc[2])
      if type(r) == 'table' and r.err then return fast_incr_error(K, inc, r) end
      inc[2] = r
    else
      inc[t + 1] = redis.call(inc[t + 2], K[1], inc[t], inc[t + 1])
    end
  end
  return nil
end

-- An increment's reply `v` as the value stored. HINCRBYFLOAT answers the
-- stored text; HINCRBY an integer, which Lua holds as a number and
-- `tostring` would cut to 14 digits (1.2345678901234e+14): it is written
-- out in full.
local function fast_stored(v)
  if type(v) == 'number' then return string.format('%d', v) end
  return v
end

-- The value the increment of `field` among `inc` gave it (after
-- fast_incr), as stored; nil if none of them is of `field`.
local function fast_incremented(inc, field)
  if not inc then return nil end
  for t = 1, #inc, 3 do
    if inc[t] == field then return fast_stored(inc[t + 1]) end
  end
  return nil
end

-- The entries of a tag list as stored (escaped, joined by ':'), as a set.
local function fast_tags(raw)
  local out = {}
  if raw then
    for t in string.gmatch(raw, '[^:]+') do out[t] = true end
  end
  return out
end

-- The owner key of a unique value, read with its type checked in the same
-- call: the owner (or false), or the WRONGTYPE_KEY error reply.
local function fast_owner(key)
  local owner = redis.pcall('GET', key)
  if type(owner) == 'table' and owner.err then return nil, wrong_type(key, 'string') end
  return owner
end

-- Puts back the set entries of member `m` a straight-line write made
-- before one of its writes failed (`undo`: command, key, other key
-- triples, in the order made; nil: none), last first, so that the write
-- leaves nothing behind: SADD or SREM `m` in the key, or SMOVE it from the
-- key to the other key. Every key here was written a moment ago, so holds
-- a set.
local function fast_undo(undo, m)
  if not undo then return end
  for t = #undo - 2, 1, -3 do
    if undo[t] == 'SMOVE' then
      redis.call('SMOVE', undo[t + 1], undo[t + 2], m)
    else
      redis.call(undo[t], undo[t + 1], m)
    end
  end
end
