-- The hash tag of a key as Redis Cluster reads it (the write code's and
-- unlink.lua's).
local function slot_tag(k)
  local open = string.find(k, '{', 1, true)
  if open then
    local close = string.find(k, '}', open + 1, true)
    if close and close > open + 1 then return string.sub(k, open + 1, close - 1) end
  end
  return k
end
