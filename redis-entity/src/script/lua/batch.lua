-- Many entities per call (save_all, repairs): ARGV holds, per entity, its
-- key count, its argument count and its arguments; KEYS its keys in turn.
-- Each entity gets its own result (a number or an error), as if it had been
-- written by a call of its own.
local out, k, j = {}, 0, 1
while j <= #ARGV do
  local nk, na = tonumber(ARGV[j]), tonumber(ARGV[j + 1])
  local keys = {}
  for i = 1, nk do keys[i] = KEYS[k + i] end
  k = k + nk
  local ok, r = pcall(run, keys, j + 2, j + 1 + na)
  if ok then
    out[#out + 1] = r
  elseif type(r) == 'table' and r.err then
    out[#out + 1] = redis.error_reply(r.err)
  else
    out[#out + 1] = redis.error_reply('ERR ' .. tostring(r))
  end
  j = j + 2 + na
end
return out
