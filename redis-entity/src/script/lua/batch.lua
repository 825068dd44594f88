-- Many entities in one call (save_all, repairs, sweeps): the arguments hold,
-- per entity, its key count, its argument count and its arguments; keys
-- hold its keys in turn. Each entity gets its own result (a number or an
-- error), as if it had been written by a call of its own: `each(run, keys,
-- args, first, last, ...)` writes one.
local function batch_each(each, run, keys, args, ...)
  local out, k, j = {}, 0, 1
  while j <= #args do
    local nk, na = tonumber(args[j]), tonumber(args[j + 1])
    local own = {}
    for i = 1, nk do own[i] = keys[k + i] end
    k = k + nk
    local ok, r = pcall(each, run, own, args, j + 2, j + 1 + na, ...)
    if ok then out[#out + 1] = r else out[#out + 1] = entity_error(r) end
    j = j + 2 + na
  end
  return out
end

local function batch(run, keys, args, ...)
  return batch_each(once, run, keys, args, ...)
end
