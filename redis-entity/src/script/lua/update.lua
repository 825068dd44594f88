-- Body: in-place update of an existing entity; the compare-and-set form
-- (json layout) writes only if the document is still the one read; the
-- reindex form writes nothing but re-adds every entry the stored values need.
local function update(keys, args, first, last, compare, reindex)
  local w = begin(keys, args, first)
  if not w.existed then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end
  if compare and redis.call('GET', w.K[1]) ~= w.cas then
    return redis.error_reply('ENTITY_CHANGED document changed since it was read')
  end
  return change(w, last, reindex)
end
