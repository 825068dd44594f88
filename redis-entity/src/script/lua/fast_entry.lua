-- The straight-line functions' entry (the call's keys and arguments:
-- script/fast.rs); a write the generated code does not cover runs the
-- general code. `_`: batch_each's `run`.
local function fast_entry(_, keys, args, first, last, mode)
  local done = fast_change(keys, args, first, last, mode)
  if done ~= nil then return done end
  local K, A = fast_general(keys, args, first, last)
  if mode == 'update' then return update(K, A, 1, #A, false, false) end
  return save(K, A, 1, #A, mode == 'insert')
end
