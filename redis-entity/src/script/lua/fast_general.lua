-- The keys and arguments the general code reads for a straight-line call's
-- write (script/fast.rs), rebuilt from that call's: a write the generated
-- code does not cover (the entity has a TTL or left a shadow, an increment
-- of an equality-indexed field, a data command of another kind) runs there.
local function fast_general(keys, args, first, last)
  local K = {}
  for i = 1, #keys do K[i] = keys[i] end
  if FAST_SHADOW then K[#K + 1] = keys[1] .. FAST_SHADOW end
  local x = first + 1
  local sent = {}
  for _, n in ipairs(FAST_SENT) do sent[n] = args[x]; x = x + 1 end
  -- The column operations, then the namespace, in one word.
  local ops = args[x]
  x = x + 1
  local A = { '', string.sub(ops, #FAST_COLUMNS + 1), args[first], '-1', '', '', '0' }
  -- Each column's operation and value.
  local value = {}
  for j = 1, #FAST_COLUMNS do
    local s = string.byte(ops, j)
    if s ~= 46 and s ~= 100 then value[j] = args[x]; x = x + 1 end
  end
  for n = 1, #T.idx do
    local j = FAST_INDEX_COLUMN[n]
    if not j then A[#A + 1] = sent[n]
    else
      local s = string.byte(ops, j)
      if s == 46 then A[#A + 1] = 'u'
      elseif s == 115 then A[#A + 1] = 'v' .. value[j]
      elseif s == 100 then A[#A + 1] = 'n'
      else A[#A + 1] = '' end
    end
  end
  local set, del = {}, {}
  for j = 1, #FAST_COLUMNS do
    local s = string.byte(ops, j)
    if s == 115 then set[#set + 1] = FAST_COLUMNS[j]; set[#set + 1] = value[j]
    elseif s == 100 then del[#del + 1] = FAST_COLUMNS[j] end
  end
  for _, c in ipairs({ { 'HSET', set }, { 'HDEL', del } }) do
    if #c[2] > 0 then
      A[#A + 1] = c[1]; A[#A + 1] = '1'; A[#A + 1] = tostring(#c[2])
      for _, a in ipairs(c[2]) do A[#A + 1] = a end
    end
  end
  for j = 1, #FAST_COLUMNS do
    local s = string.byte(ops, j)
    if s == 105 or s == 102 then
      A[#A + 1] = s == 105 and 'HINCRBY' or 'HINCRBYFLOAT'
      A[#A + 1] = '1'; A[#A + 1] = '2'; A[#A + 1] = FAST_COLUMNS[j]; A[#A + 1] = value[j]
    end
  end
  for i = x, last do A[#A + 1] = args[i] end
  return K, A
end
