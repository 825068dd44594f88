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
-- operation exists; followed only when the unit relates entities or
-- pushes onto timelines, `u.follow`), and the unique values given (two
-- operations may not give one value to two entities).

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
  check = function(u, op)
    local exists = function(key) return unit_exists(u, key) end
    op.live = timeline_owners(op.keys, op.args, op.first - 1, exists)
    return timeline_check(op.keys, op.live)
  end,
  apply = function(u, op) return timeline_push(op.keys, op.args, op.first - 1, op.live) end,
}
UNIT.board = {
  check = function(u, op) return wrong_type(op.keys[1], 'zset') end,
  apply = function(u, op) return board_incr(op.keys, op.args, op.first - 1) end,
}

-- A save, insert or update in its type's straight-line code (`FAST`, made
-- per type by script/fast.rs) comes as one of these kinds, in that code's
-- compact arguments, and runs in that mode. Its checks return the writes'
-- variables as one array, which phase 2 hands to its write: no record is
-- made for it. A write the straight-line code leaves to the general code
-- (nil from its checks) runs there, its arguments rebuilt; nothing was
-- written before.
local FAST_MODE = { [83] = 'save', [73] = 'insert', [85] = 'update' }

-- The kinds of operation by their byte in the call's header
-- (script::args::UNIT_KINDS): s i u d r n p b, and S I U above.
local KINDS = {
  [115] = 'save', [105] = 'insert', [117] = 'update', [100] = 'delete', [114] = 'relate',
  [110] = 'unrelate', [112] = 'push', [98] = 'board',
}

-- The record of an operation the straight-line code does not run: its
-- kind, type, keys and the range of its arguments in `args`. `mode` and
-- `F`: its straight-line mode and its type's straight-line code, if any.
local function unit_op(n, c, t, mode, F, own, args, first, last)
  if not mode then
    return { i = n, kind = KINDS[c], t = t, keys = own, args = args, first = first, last = last }
  end
  if not F then return { i = n, t = t } end
  local K, A = F.general(own, args, first, last)
  return { i = n, kind = mode, t = t, keys = K, args = A, first = 1, last = #A }
end

-- The header of a unit parsed: six entries per operation (its kind byte,
-- its type's number, the position of its first key in KEYS less one, its
-- key count, and its first and last argument in ARGV), and `follow`:
-- whether the unit relates, unrelates or pushes (only then do the
-- straight-line operations record which entities they leave stored, in
-- `u.exists`: a relation's ends and a push's owners are checked there).
local function parse_header(head)
  local s, k, j, follow = {}, 0, 2, false
  for h = 1, #head, 9 do
    local c, t1, t2, k1, k2, k3, a1, a2, a3 = string.byte(head, h, h + 8)
    local nk, na = (k1 * 256 + k2) * 256 + k3, (a1 * 256 + a2) * 256 + a3
    local b = #s
    s[b + 1], s[b + 2], s[b + 3], s[b + 4], s[b + 5], s[b + 6] = c, t1 * 256 + t2, k, nk, j, j + na - 1
    k, j = k + nk, j + na
    if c == 114 or c == 110 or c == 112 then follow = true end
  end
  s.follow = follow
  return s
end

-- The parsed headers of recent units of up to SHAPE_OPS operations, by
-- header (a unit's shape: the same kinds, types and counts give the same
-- header), at most SHAPES_MAX of them (then the cache starts again): the
-- units an application sends are a few shapes, and reading a header costs
-- a small unit as much as one of its operations' checks.
local SHAPES, SHAPES_N, SHAPES_MAX, SHAPE_OPS = {}, 0, 256, 32
local function shape(head)
  local s = SHAPES[head]
  if s then return s end
  s = parse_header(head)
  if #head <= 9 * SHAPE_OPS then
    if SHAPES_N >= SHAPES_MAX then SHAPES, SHAPES_N = {}, 0 end
    SHAPES[head], SHAPES_N = s, SHAPES_N + 1
  end
  return s
end

-- The operation being checked, so that an error raised by a check names
-- it (one pcall around phase 1, not one per operation).
local AT = 0

-- Phase 1: each operation of shape `s` checked in turn; `ops` gets two
-- entries per operation: its state and, for straight-line code, its type
-- (false for the others). Returns the first refusal, or nil and an error
-- that is no operation's (an unknown kind in the header).
local function unit_checks(keys, args, u, ops, s)
  for n = 1, #s / 6 do
    local b = 6 * n - 6
    local c, t, k, nk, first, last = s[b + 1], s[b + 2], s[b + 3], s[b + 4], s[b + 5], s[b + 6]
    AT = n
    T = TYPES[t] or T
    local own = nk == 1 and { keys[k + 1] } or { unpack(keys, k + 1, k + nk) }
    local mode, F = FAST_MODE[c], FAST[t]
    local state = mode and F and F.unit(own, args, first, last, mode, u, n == 1)
    if state then
      if state.err then return state end
      ops[2 * n - 1], ops[2 * n] = state, t
    else
      local op = unit_op(n, c, t, mode, F, own, args, first, last)
      local handler = op.kind and UNIT[op.kind]
      if not handler then
        return nil, redis.error_reply('ERR redis-entity: unknown unit operation ' .. tostring(c))
      end
      ops[2 * n - 1], ops[2 * n] = op, false
      local refused = handler.check(u, op)
      if refused then return refused end
    end
  end
  return nil
end

local function unit(keys, args)
  -- Sized for a unit of four: fewer tables grown on the way (every table
  -- made or grown here is a measurable part of a small unit's time).
  local ops = { false, false, false, false, false, false, false, false }
  local s = shape(args[1] or '')
  local u = { exists = {}, unique = {}, sets = {}, follow = s.follow }
  AT = 0
  local ok, refused, malformed = pcall(unit_checks, keys, args, u, ops, s)
  if not ok then
    refused = redis.error_reply(type(refused) == 'table' and refused.err or tostring(refused))
  end
  if malformed then return malformed end
  if refused then
    return redis.error_reply('UNIT_REFUSED ' .. (AT - 1) .. ' ' .. refused.err)
  end
  -- Phase 2: the writes, in order. The i-th result goes into `ops[i]`,
  -- an entry of an operation already written (operation (i + 1) // 2), so
  -- that `ops` becomes the reply.
  local n = AT
  for i = 1, n do
    local op, t = ops[2 * i - 1], ops[2 * i]
    local r, bad
    if t then
      T = TYPES[t] or T
      r = FAST[t].write(op)
      -- Only the unit's first operation leaves a check to its first write
      -- (an increment), which then fails having written nothing.
      if type(r) == 'table' and r.err then
        return redis.error_reply('UNIT_REFUSED ' .. (i - 1) .. ' ' .. r.err)
      end
    else
      T = TYPES[op.t] or T
      r, bad = UNIT[op.kind].apply(u, op)
      if r == nil and bad then return bad end
    end
    ops[i] = r
  end
  for i = n + 1, math.max(2 * n, 8) do ops[i] = nil end
  return ops
end
