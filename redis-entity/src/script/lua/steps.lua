-- The two-phase steps of relations, timelines and boards. Relate or
-- unrelate two entities, both sides in one step:
-- `relation_check` reads and checks (nothing written), `relation_apply`
-- writes. The relation script runs both; a unit of work runs every
-- operation's check before the first apply.
--
-- K[1]: the forward set of a (`<a key>:<name>`, members of b's type)
-- K[2]: the reverse set of b (`<b key>:<reverse>`, members of a's type)
-- K[3], K[4]: the relation registers of a and b (`<key>:@rel`): per
--          relation set, how to find the sets on the other side, so that
--          deleting (or sweeping an expired) entity removes it everywhere
-- A[o + 1..]: mode (relate | unrelate), a's member, b's member, name,
--       reverse, a's register entry, b's register entry, '1' for
--       one-to-many (b has at most one a), a's type head and tail, then for
--       a and for b: the entity key and the expiry set of its type (an
--       entity with a TTL is listed there, so that a sweep can take it out
--       of its relations)
-- `exists(key)`: whether the entity of that key exists (in a unit, once
-- the unit's earlier operations are applied). `sets` (a unit's only): the
-- changes its earlier operations make to relation sets, `sets[key][member]`
-- true (added) or false (removed), so that a one-to-many relate sees the
-- parent an earlier one gave the child; each check adds its own.

-- The members of set `key` once the changes in `sets` are applied.
local function set_members(key, sets)
  local stored = redis.call('SMEMBERS', key)
  local changes = sets and sets[key]
  if not changes then return stored end
  local out, seen = {}, {}
  for _, m in ipairs(stored) do
    seen[m] = true
    if changes[m] ~= false then out[#out + 1] = m end
  end
  for m, present in pairs(changes) do
    if present and not seen[m] then out[#out + 1] = m end
  end
  return out
end

local function set_change(sets, key, member, present)
  if not sets then return end
  sets[key] = sets[key] or {}
  sets[key][member] = present
end

local function relation_check(K, A, o, state, exists, sets)
  local refused = wrong_types({ { K[1], 'set' }, { K[2], 'set' }, { K[3], 'hash' }, { K[4], 'hash' } })
  if refused then return refused end
  if A[o + 1] == 'unrelate' then
    set_change(sets, K[1], A[o + 3], false)
    set_change(sets, K[2], A[o + 2], false)
    return nil
  end
  -- Both entities must exist: relating a missing one is an error, and
  -- nothing is written.
  for side, at in ipairs({ 11, 13 }) do
    if not exists(A[o + at]) then
      return redis.error_reply('ENTITY_NOT_FOUND ' .. side)
    end
  end
  local a, name = A[o + 2], A[o + 4]
  local pttls, more = {}, {}
  for side, at in ipairs({ 11, 13 }) do
    pttls[side] = redis.call('PTTL', A[o + at])
    if pttls[side] > 0 then more[#more + 1] = { A[o + at + 1], 'zset' } end
  end
  local previous = {}
  if A[o + 8] == '1' then
    -- (A register's key is its entity's key and a suffix: a's tells it.)
    local rel = string.sub(K[3], #(A[o + 9] .. a .. A[o + 10]) + 1)
    for _, old in ipairs(set_members(K[2], sets)) do
      if old ~= a then
        previous[#previous + 1] = old
        local old_key = A[o + 9] .. old .. A[o + 10]
        more[#more + 1] = { old_key .. ':' .. name, 'set' }
        more[#more + 1] = { old_key .. rel, 'hash' }
      end
    end
    state.rel = rel
  end
  state.pttls, state.previous = pttls, previous
  local refused = wrong_types(more)
  if refused then return refused end
  for _, old in ipairs(previous) do
    set_change(sets, A[o + 9] .. old .. A[o + 10] .. ':' .. name, A[o + 3], false)
    set_change(sets, K[2], old, false)
  end
  set_change(sets, K[1], A[o + 3], true)
  set_change(sets, K[2], a, true)
  return nil
end

local function relation_apply(K, A, o, state)
  local a, b, name, reverse = A[o + 2], A[o + 3], A[o + 4], A[o + 5]
  if A[o + 1] == 'unrelate' then
    local removed = redis.call('SREM', K[1], b)
    redis.call('SREM', K[2], a)
    -- An emptied set leaves the register too, so nothing is left behind.
    if redis.call('EXISTS', K[1]) == 0 then redis.call('HDEL', K[3], name) end
    if redis.call('EXISTS', K[2]) == 0 then redis.call('HDEL', K[4], reverse) end
    return removed
  end
  -- One-to-many: b leaves its previous a (whose register loses the
  -- relation when its set empties, as an unrelate does).
  for _, old in ipairs(state.previous) do
    local old_key = A[o + 9] .. old .. A[o + 10]
    redis.call('SREM', old_key .. ':' .. name, b)
    if redis.call('EXISTS', old_key .. ':' .. name) == 0 then
      redis.call('HDEL', old_key .. state.rel, name)
    end
    redis.call('SREM', K[2], old)
  end
  local added = redis.call('SADD', K[1], b)
  redis.call('SADD', K[2], a)
  redis.call('HSET', K[3], name, A[o + 7])
  redis.call('HSET', K[4], reverse, A[o + 6])
  local now
  for i, side in ipairs({ { A[o + 11], A[o + 12], a }, { A[o + 13], A[o + 14], b } }) do
    local pttl = state.pttls[i]
    if pttl > 0 then
      if not now then
        local t = redis.call('TIME')
        now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      end
      redis.call('ZADD', side[2], now + pttl, side[3])
    end
  end
  return added
end

-- A push of a post onto the timelines of many owners, capped. K: per
-- owner, its timeline (a list) then its relation register (a hash).
-- A[o + 1..]: mode, the post's member, the last position kept (cap - 1),
-- the timeline's name, its register entry, and the suffix after an
-- owner's entity key of the key whose existence means the owner exists.
--
-- An owner that does not exist (never saved, deleted, or expired) is
-- skipped: no list is made for it (it would outlive nobody's entity),
-- and the reply counts only the timelines written. `exists(key)`: as for
-- `relation_check` (in a unit, after the unit's earlier operations).
-- Returns the positions in K of the owners that exist.
local function timeline_owners(K, A, o, exists)
  local live, cut = {}, #A[o + 4] + 1
  for i = 1, #K, 2 do
    if exists(string.sub(K[i], 1, #K[i] - cut) .. A[o + 6]) then live[#live + 1] = i end
  end
  return live
end

-- The types of the keys the push writes: the live owners' lists and registers.
local function timeline_check(K, live)
  for _, i in ipairs(live) do
    local refused = wrong_type(K[i], 'list') or wrong_type(K[i + 1], 'hash')
    if refused then return refused end
  end
  return nil
end

-- A list the post already heads is left as it is (an owner met twice by
-- a paged fan-out, or a push sent again): the post is listed once.
local function timeline_push(K, A, o, live)
  for _, i in ipairs(live) do
    if redis.call('LINDEX', K[i], 0) ~= A[o + 2] then
      redis.call('LPUSH', K[i], A[o + 2])
      redis.call('LTRIM', K[i], 0, A[o + 3])
      redis.call('HSET', K[i + 1], A[o + 4], A[o + 5])
    end
  end
  return #live
end

-- A score added on a board bucket (K[1], a sorted set), and the bucket's
-- expiry. A[o + 1..]: the delta, the member, the expiry (unix ms).
local function board_incr(K, A, o)
  local score = redis.call('ZINCRBY', K[1], A[o + 1], A[o + 2])
  redis.call('PEXPIREAT', K[1], A[o + 3])
  return score
end
