#!lua flags=no-writes
-- redis-entity: the 0-based rank of a member in a sorted index, highest score
-- first, counting only entities that still exist.
-- KEYS[1]: the sorted index; KEYS[2]: the expiry set of the type
-- ARGV[1]: the member; ARGV[2]: owner head; ARGV[3..]: presence suffixes
-- On a cluster, with ARGV[1] = '@ahead', the count of live members of this
-- shard ranked ahead of a member of another: ARGV[2] owner head, ARGV[3]
-- the member, ARGV[4] its score, ARGV[5..] presence suffixes.
local ahead = ARGV[1] == '@ahead'
local head, first = ARGV[2], 3
if ahead then first = 5 end
local function alive(m)
  for j = first, #ARGV do
    if call('EXISTS', head .. m .. ARGV[j]) == 1 then return true end
  end
  return false
end
local now
local function live_count(members)
  if not now then
    local t = call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local live = 0
  if #members == 0 then return 0 end
  local expires = call('ZMSCORE', KEYS[2], unpack(members))
  for j, m in ipairs(members) do
    local at = expires[j] and tonumber(expires[j])
    if not (at and at <= now) and alive(m) then live = live + 1 end
  end
  return live
end
if ahead then
  local member, score = ARGV[3], ARGV[4]
  local ties = {}
  for _, m in ipairs(call('ZRANGE', KEYS[1], score, score, 'BYSCORE')) do
    if m > member then ties[#ties + 1] = m end
  end
  if call('ZCARD', KEYS[2]) == 0 then
    return call('ZCOUNT', KEYS[1], '(' .. score, '+inf') + #ties
  end
  local live = live_count(ties)
  local offset = 0
  while true do
    local chunk = call('ZRANGE', KEYS[1], '+inf', '(' .. score, 'BYSCORE', 'REV', 'LIMIT', offset, 256)
    live = live + live_count(chunk)
    if #chunk < 256 then return live end
    offset = offset + 256
  end
end
local r = call('ZREVRANK', KEYS[1], ARGV[1])
if not r then return false end
if call('ZCARD', KEYS[2]) == 0 then return r end
if not alive(ARGV[1]) then return false end
if r == 0 then return 0 end
-- The members ahead, a chunk at a time: one whose expiry time has passed
-- (one ZMSCORE per chunk) is not counted without further look; the others
-- are checked to exist.
local live = 0
for start = 0, r - 1, 256 do
  live = live + live_count(call('ZREVRANGE', KEYS[1], start, math.min(start + 255, r - 1)))
end
return live
