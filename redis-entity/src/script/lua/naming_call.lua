-- `call`: redis.call that, on a key of the wrong type, fails naming that key
-- (`WRONGTYPE_KEY <found> <wanted> <key>`) rather than as the call's first
-- key, and never with the server's bare WRONGTYPE message. A script runs
-- this chunk on every call: the table of wanted types is made only on an
-- error (made up front, it cost about 2,000 of a unique lookup's 55,000
-- server instructions; benches/NOTES.md, *The 32-task mix*).
local function call(cmd, ...)
  local r = redis.pcall(cmd, ...)
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'WRONGTYPE', 1, true) then
      local wants = { S = 'set', Z = 'zset', H = 'hash', L = 'list' }
      local want = wants[string.sub(cmd, 1, 1)] or 'string'
      for _, x in ipairs({ ... }) do
        local t = redis.pcall('TYPE', x)
        if type(t) == 'table' and t.ok and t.ok ~= 'none' and t.ok ~= want then
          error({ err = 'WRONGTYPE_KEY ' .. t.ok .. ' ' .. want .. ' ' .. x })
        end
      end
    end
    error(r)
  end
  return r
end
