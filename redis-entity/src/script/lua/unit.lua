-- Units of work: any number of operations on entities of the types of this
-- library (saves, inserts, updates, deletes, relations, timeline pushes,
-- board increments) as one all-or-nothing write. Phase 1 reads what each
-- operation needs and runs every check (versions, conditions, unique
-- values, relation ends, the types of the keys it will write); the first
-- refusal ends the call before anything is written, naming the operation.
-- Phase 2 writes, in order.
--
-- KEYS: each operation's keys in turn. ARGV[1]: the header, 9 bytes per
-- operation: its kind (`KINDS`), its type's number in TYPES (2 bytes, 0 for
-- the kinds that need none), its key count and its argument count (3 bytes
-- each, big-endian). Then each operation's arguments in turn, as the single
-- operation's function or script takes them.
--
-- A save, insert or update of a type with straight-line code comes as
-- `fast_save`, `fast_insert` or `fast_update`, in that code's arguments.
--
-- Within a unit, an entity is written by at most one operation (the client
-- refuses a unit that names one twice), so what phase 1 read of an entity
-- still holds in phase 2. What operations do to each other is followed in
-- `u`: the entities saved or deleted (a relation end saved by an earlier
-- operation exists), and the unique values given (two operations may not
-- give one value to two entities).

-- Records that the unit's earlier operations leave the entity of `w`
-- stored (or not), under each key whose existence means it exists (a
-- relation checks one of them: the entity key, or a strings-layout
-- entity's first required column).
local function unit_leaves(u, w, stored)
  for i = 1, #w.K do
    if role(i) == 'p' then u.exists[w.K[i]] = stored end
  end
end

-- Whether the entity whose key is `key` exists once the earlier operations
-- of the unit are applied.
local function unit_exists(u, key)
  local known = u.exists[key]
  if known ~= nil then return known end
  return redis.call('EXISTS', key) == 1
end

-- The unique values an entity write gives, against those the unit's
-- earlier operations give.
local function unit_unique(u, w)
  for _, n in ipairs(T.unique) do
    local value = w.given[n] and type(w.new[n]) == 'table' and next(w.new[n])
    if value then
      local key = w.pre[n] .. value
      local owner = u.unique[key]
      if owner and owner ~= w.member then
        return redis.error_reply('UNIQUE_VIOLATION ' .. (n - 1))
      end
      u.unique[key] = w.member
    end
  end
  return nil
end

local UNIT = {}

UNIT.save = {
  check = function(u, op, insert)
    local w = begin(op.keys, op.args, op.first)
    op.w = w
    if insert and w.existed then return redis.error_reply('ENTITY_EXISTS entity already stored') end
    local refused = check_change(w, op.last, false) or unit_unique(u, w)
    unit_leaves(u, w, true)
    return refused
  end,
  apply = function(u, op) return apply_change(op.w, op.last, false) end,
}
UNIT.insert = {
  check = function(u, op) return UNIT.save.check(u, op, true) end,
  apply = UNIT.save.apply,
}
UNIT.update = {
  check = function(u, op)
    local w = begin(op.keys, op.args, op.first)
    op.w = w
    if not w.existed then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
    return check_change(w, op.last, false) or unit_unique(u, w)
  end,
  apply = UNIT.save.apply,
}
UNIT.delete = {
  check = function(u, op)
    local w = begin(op.keys, op.args, op.first)
    op.w = w
    local refused = check_delete(w)
    unit_leaves(u, w, false)
    return refused
  end,
  apply = function(u, op) return apply_delete(op.w) end,
}
UNIT.relate = {
  check = function(u, op)
    op.state = {}
    local exists = function(key) return unit_exists(u, key) end
    return relation_check(op.keys, op.args, op.first - 1, op.state, exists, u.sets)
  end,
  apply = function(u, op) return relation_apply(op.keys, op.args, op.first - 1, op.state) end,
}
UNIT.unrelate = UNIT.relate
UNIT.push = {
  check = function(u, op) return timeline_check(op.keys) end,
  apply = function(u, op) return timeline_push(op.keys, op.args, op.first - 1) end,
}
UNIT.board = {
  check = function(u, op) return wrong_type(op.keys[1], 'zset') end,
  apply = function(u, op) return board_incr(op.keys, op.args, op.first - 1) end,
}

-- A save, insert or update in its type's straight-line code (`FAST`, made
-- per type by script/fast.rs), sent in that code's compact arguments. A
-- write the straight-line code leaves to the general code (nil from its
-- checks) runs there, its arguments rebuilt; nothing was written before.
local function fast_kind(mode)
  return {
    check = function(u, op)
      local F = FAST[op.t]
      local state = F.unit(op.keys, op.args, op.first, op.last, mode, u, op.i == 1)
      if state ~= nil then
        if state.err then return state end
        op.state = state
        return nil
      end
      local K, A = F.general(op.keys, op.args, op.first, op.last)
      op.keys, op.args, op.first, op.last = K, A, 1, #A
      op.general = UNIT[mode]
      return op.general.check(u, op)
    end,
    apply = function(u, op)
      if op.general then return op.general.apply(u, op) end
      local r = FAST[op.t].write(op.state)
      -- Only the unit's first operation leaves a check to its first write
      -- (an increment), which then fails having written nothing.
      if type(r) == 'table' and r.err then
        return nil, redis.error_reply('UNIT_REFUSED ' .. (op.i - 1) .. ' ' .. r.err)
      end
      return r
    end,
  }
end
UNIT.fast_save = fast_kind('save')
UNIT.fast_insert = fast_kind('insert')
UNIT.fast_update = fast_kind('update')

-- The kinds of operation by their byte in the call's header
-- (script::args::UNIT_KINDS): s i u d r n p b S I U.
local KINDS = {
  [115] = 'save', [105] = 'insert', [117] = 'update', [100] = 'delete', [114] = 'relate',
  [110] = 'unrelate', [112] = 'push', [98] = 'board', [83] = 'fast_save', [73] = 'fast_insert',
  [85] = 'fast_update',
}

local function unit(keys, args)
  -- Phase 1: each operation read from the header and checked in turn.
  local head = args[1] or ''
  local ops, n, k, j = {}, 0, 0, 2
  local u = { exists = {}, unique = {}, sets = {} }
  for h = 1, #head, 9 do
    local c, t1, t2, k1, k2, k3, a1, a2, a3 = string.byte(head, h, h + 8)
    local kind, t = KINDS[c], t1 * 256 + t2
    local nk, na = (k1 * 256 + k2) * 256 + k3, (a1 * 256 + a2) * 256 + a3
    local own = {}
    for i = 1, nk do own[i] = keys[k + i] end
    k = k + nk
    n = n + 1
    local op = { i = n, kind = kind, t = t, keys = own, args = args, first = j, last = j + na - 1 }
    ops[n] = op
    j = j + na
    T = TYPES[t] or T
    local handler = kind and UNIT[kind]
    if not handler then return redis.error_reply('ERR redis-entity: unknown unit operation ' .. tostring(c)) end
    local ok, refused = pcall(handler.check, u, op)
    if not ok then
      refused = redis.error_reply(type(refused) == 'table' and refused.err or tostring(refused))
    end
    if refused then
      return redis.error_reply('UNIT_REFUSED ' .. (n - 1) .. ' ' .. refused.err)
    end
  end
  -- Phase 2: the writes, in order.
  local out = {}
  for i = 1, n do
    local op = ops[i]
    T = TYPES[op.t] or T
    local r, bad = UNIT[op.kind].apply(u, op)
    if r == nil and bad then return bad end
    out[i] = r
  end
  return out
end
