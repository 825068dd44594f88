-- redis-entity: the member ids matching a set-algebra query, in one call.
--
-- KEYS: the index sets of every condition, group after group, then the set
--       of all members of the entity type (the universe of a query that has
--       only `none` conditions).
-- ARGV: group count; per group its operation (all | any | none) and key count;
--       then the sort mode (n = numeric members, s = text), offset, limit
--       (-1: no limit; 0: only count).
-- Returns: { total matches (ignoring offset and limit), members of the page... }
-- Nothing is written: no temporary keys, so nothing can outlive the query.
local a = 0
local function arg() a = a + 1; return ARGV[a] end
local all_keys, any_groups, none_keys = {}, {}, {}
local k = 0
for g = 1, tonumber(arg()) do
  local op, n = arg(), tonumber(arg())
  local keys = {}
  for j = 1, n do k = k + 1; keys[j] = KEYS[k] end
  if op == 'all' then
    for _, key in ipairs(keys) do all_keys[#all_keys + 1] = key end
  elseif op == 'any' then
    any_groups[#any_groups + 1] = keys
  else
    for _, key in ipairs(keys) do none_keys[#none_keys + 1] = key end
  end
end
local universe = KEYS[k + 1]
local sort_mode, offset, limit = arg(), tonumber(arg()), tonumber(arg())

local function to_set(list)
  local s = {}
  for _, m in ipairs(list) do s[m] = true end
  return s
end
local function keep(list, pred)
  local out = {}
  for _, m in ipairs(list) do if pred(m) then out[#out + 1] = m end end
  return out
end

-- SINTER orders its inputs by size itself; unions of `any` groups are
-- intersected smallest first, and an empty result stops early.
local result
if #all_keys > 0 then result = redis.call('SINTER', unpack(all_keys)) end
local unions = {}
for _, keys in ipairs(any_groups) do
  local size = 0
  for _, key in ipairs(keys) do size = size + redis.call('SCARD', key) end
  unions[#unions + 1] = { size = size, keys = keys }
end
table.sort(unions, function(x, y) return x.size < y.size end)
for _, u in ipairs(unions) do
  if result and #result == 0 then break end
  local members = {}
  -- `any` of no values matches nothing.
  if #u.keys > 0 then members = redis.call('SUNION', unpack(u.keys)) end
  if result == nil then
    result = members
  else
    local s = to_set(members)
    result = keep(result, function(m) return s[m] end)
  end
end
if result == nil then result = redis.call('SMEMBERS', universe) end
if #none_keys > 0 and #result > 0 then
  local excluded = to_set(redis.call('SUNION', unpack(none_keys)))
  result = keep(result, function(m) return not excluded[m] end)
end

if sort_mode == 'n' then
  table.sort(result, function(x, y)
    local nx, ny = tonumber(x) or 0, tonumber(y) or 0
    if nx ~= ny then return nx < ny end
    return x < y
  end)
else
  table.sort(result)
end

local out = { #result }
local last = #result
if limit >= 0 then last = math.min(#result, offset + limit) end
for j = offset + 1, last do out[#out + 1] = result[j] end
return out
