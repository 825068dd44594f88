-- The hash tag of a key as Redis Cluster reads it, and which other sides a
-- call on an entity's key may write (the write code's and unlink.lua's).
local function slot_tag(k)
  local open = string.find(k, '{', 1, true)
  if open then
    local close = string.find(k, '}', open + 1, true)
    if close and close > open + 1 then return string.sub(k, open + 1, close - 1) end
  end
  return k
end

-- Whether a call on `entity` (one of the entity's keys) may write
-- `head .. m .. tail` (`theirs`): always on one server (where keys carry no
-- hash tag, or the namespace's one); on a cluster (every key has a tag:
-- `user:{9}`, `{user:3}:user:9`) only a key of the entity's slot, and never
-- one whose head holds the shard mark (byte 31: its shard is the client's
-- to compute).
local function side_in_slot(entity, head, theirs)
  if string.find(head, '\31', 1, true) then return false end
  if not string.find(entity, '{', 1, true) then return true end
  return slot_tag(theirs) == slot_tag(entity)
end
