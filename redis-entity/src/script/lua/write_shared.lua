-- redis-entity: the helpers of a type's library that both its straight-line
-- write (lua/fast.lua and the code script/fast.rs generates) and its
-- general code (lua/write_prelude.lua and the bodies) use. A library of a
-- type the straight-line code covers compiles this at load and the general
-- code only on its first call that needs it (script/write.rs).

-- The injective escaping of values inside keys: the alphabet comes from
-- the runtime (a property test checks that both escape alike).
-- A value of letters, digits and the marks in `PLAIN` (none of them
-- escaped: script/write.rs checks it) is kept as it is after one anchored
-- pass, about a third of the cost of searching it for the escape alphabet.
local PLAIN = '^[%w_%-%.@ ]*$'
local function esc(v)
  if v == '' then return T.empty end
  if string.find(v, PLAIN) or not string.find(v, ESCAPED) then return v end
  return (string.gsub(v, ESCAPED, function(c)
    return string.format('%%%02X', string.byte(c))
  end))
end

-- The set of all ids (`keyspace::bucketed_ids`). A type with an integer pk
-- keeps its ids in buckets of at most 100, `<ids>:<member without its last two
-- digits>xx`, which Redis keeps as intsets, listed in `<ids>:@buckets`; any
-- other type keeps one set, and so does a padded id (a leading zero: not an
-- intset member). Cut from the text: Lua numbers are not exact past 2^53.
-- Returns the set the member goes in.
local function ids_bucket(ids, m)
  if #m > 1 and string.byte(m, 1) == 48 then return ids end
  return ids .. ':' .. (#m > 2 and string.sub(m, 1, #m - 2) or '') .. 'xx'
end

local function ids_directory(ids)
  return ids .. ':@buckets'
end

-- Whether increment `op` accepts stored value `v` (nil: nothing stored):
-- an integer for HINCRBY / INCRBY, any number for the float forms.
local function accepts_increment(op, v)
  if not v then return true end
  if op == 'HINCRBY' or op == 'INCRBY' then return string.match(v, '^%-?%d+$') ~= nil end
  return tonumber(v) ~= nil
end

-- The refusal of an increment whose stored value is not a number of its
-- kind. Detail: key position, field ('' for a column key), the stored value.
local function not_a_number(k, field, v)
  return redis.error_reply('NOT_A_NUMBER ' .. k .. ' ' .. field .. ' ' .. v)
end

-- HSET of the arguments A[first..last] in chunks: unpack() of a very large
-- argument list overflows Lua's C stack.
local function hset(A, key, first, last)
  for s = first, last, 1000 do
    redis.call('HSET', key, unpack(A, s, math.min(s + 999, last)))
  end
end

-- An entity's write that raised `r` (an error reply of redis.call, or a
-- Lua error), as its result in a batch's reply.
local function entity_error(r)
  if type(r) == 'table' and r.err then return redis.error_reply(r.err) end
  return redis.error_reply('ERR ' .. tostring(r))
end
