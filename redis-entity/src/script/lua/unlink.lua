-- redis-entity: one page of the unlinking of a deleted (or swept) entity's
-- large relation set (see `UNLINK_WHOLE`, lua/write_prelude.lua): the
-- delete renamed the set to `<set>:@unlinking`; each page takes up to
-- `count` of its members out of it and the entity out of each member's
-- other side, in one atomic call.
--
-- KEYS[1]: the renamed set (under the entity's key: its slot)
-- ARGV: the entity's member, the set's register entry (`head \n tail \n
--       name \n presence`: how to find the other side), the page's size,
--       the suffix of a relation register (`:@rel`)
-- Returns { 1 while members remain (0 at the end), the members whose side
-- is in another slot of a cluster (for the client, as a delete returns
-- them)... }. A member is taken out of the renamed set only once its side
-- is written.
local head, tail, other = string.match(ARGV[2], '^(.-)\n(.-)\n([^\n]*)')
-- At most 4,000 a page: Lua's unpack takes no more (the SREM below).
local taken = call('SRANDMEMBER', KEYS[1], math.min(tonumber(ARGV[3]), 4000))

local out = { 0 }
for _, m in ipairs(taken) do
  local theirs = head .. m .. tail
  if side_in_slot(KEYS[1], head, theirs) then
    -- A side of the wrong type (written around the library) is skipped,
    -- not allowed to stop the unlinking of every other: `verify` reports it.
    local set, register = theirs .. ':' .. other, theirs .. ARGV[4]
    local removed = redis.pcall('SREM', set, ARGV[1])
    if type(removed) == 'number' and redis.call('EXISTS', set) == 0 then
      redis.pcall('HDEL', register, other)
    end
  else
    out[#out + 1] = m
  end
end
if #taken > 0 then call('SREM', KEYS[1], unpack(taken)) end
out[1] = call('EXISTS', KEYS[1])
return out
