-- Body: delete the entity, every index entry and both sides of its relations
-- (the sides in other slots of a cluster are returned for the client), in
-- two phases as `change`: the checks, then the writes.
local function check_delete(w)
  -- A conditional delete: the conditions, and for the json layout the
  -- document the client checked them on.
  local refused = condition_failed(w)
  if refused then return refused end
  if w.cas ~= '' and redis.call('GET', w.K[1]) ~= w.cas then
    return redis.error_reply('ENTITY_CHANGED document changed since it was read')
  end
  w.was_tracked = tracked(w)
  return check_key_types(w, false, 'all', w.was_tracked) or check_relation_types(w)
end

local function apply_delete(w)
  unindex_all(w)
  local away = unrelate_all(w)
  -- UNLINK: a big `#[hash]` map is freed in the background, not during
  -- the call (its keys are gone at once either way).
  redis.call('UNLINK', unpack(w.K))
  if w.was_tracked then redis.call('ZREM', w.expiry_key, w.member) end
  return with_away(w.existed and 1 or 0, away)
end

local function delete(keys, args, first, last)
  local w = begin(keys, args, first)
  local refused = check_delete(w)
  if refused then return refused end
  return apply_delete(w)
end
