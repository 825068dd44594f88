-- The straight-line functions' fallback and batch loop (the call's keys
-- and arguments: script/fast.rs); a write the generated code does not
-- cover runs the general code. A single call's function (registered in
-- script/write.rs) calls fast_change, then fast_fallback if it returned nil.

-- The general code, for a write fast_change returned nil for (before it
-- wrote anything).
local function fast_fallback(keys, args, first, last, mode)
  local K, A = fast_general(keys, args, first, last)
  local G = general()
  if mode == 'update' then return G.update(K, A, 1, #A, false, false) end
  return G.save(K, A, 1, #A, mode == 'insert')
end

-- The batch form (save_all and the like on the straight-line path):
-- batch_each's arguments and results (per entity its key count, argument
-- count and arguments; its own result or error). Measured with
-- `cargo bench --bench workload -- --instructions`: reusing one table of
-- keys for every entity (fast_change keeps none of it, fast_general copies
-- it) and calling fast_change here rather than through batch_each's `each`
-- and a helper save about 2,500 of 76,500 server instructions per entity
-- (benches/NOTES.md, *Server instructions per write*).
local function fast_batch(keys, args, mode)
  local out, k, j, n, own = {}, 0, 1, #args, {}
  while j <= n do
    local nk, na = tonumber(args[j]), tonumber(args[j + 1])
    for i = 1, nk do own[i] = keys[k + i] end
    k = k + nk
    local first, last = j + 2, j + 1 + na
    local ok, r = pcall(fast_change, own, args, first, last, mode)
    if ok and r == nil then ok, r = pcall(fast_fallback, own, args, first, last, mode) end
    if ok then out[#out + 1] = r else out[#out + 1] = entity_error(r) end
    j = j + 2 + na
  end
  return out
end
