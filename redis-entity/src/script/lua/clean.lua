-- Body: remove index entries a reader found stale. Arguments after the
-- common ones: pairs of index number and escaped value; each entry goes
-- unless the stored value needs it. Returns how many were removed.
local function clean(keys, args, first, last)
  begin(keys, args, first)
  if not existed and ghost then
    -- The entity expired: every entry its shadow lists goes, not only those
    -- the reader met.
    unindex_all()
    redis.call('DEL', shadow)
    redis.call('ZREM', expiry_key, member)
  end
  local removed = 0
  for j = a + 1, last, 2 do
    local n, e = tonumber(A[j]), A[j + 1]
    local spec = T.idx[n]
    if spec and spec.kind == 'p' then
      -- A reader knows the prefix it searched, not the stale value: remove
      -- every entry of this member in that range that the stored value does
      -- not need.
      for _, entry in ipairs(redis.call('ZRANGEBYLEX', pre[n], '[' .. e, '(' .. e .. '\255')) do
        local sep = string.find(entry, ':', 1, true)
        if sep and string.sub(entry, sep + 1) == member then
          local v = string.sub(entry, 1, sep - 1)
          if not (existed and old[n][v]) then removed = removed + redis.call('ZREM', pre[n], entry) end
        end
      end
    elseif spec and spec.kind == 's' then
      -- A sorted entry with a wrong score is rewritten from the stored value;
      -- one whose stored value is not a number (or gone) is removed.
      local v = existed and next(old[n])
      if v and tonumber(v) then
        add_entry(n, v)
      else
        removed = removed + remove_entry(n, e)
      end
    elseif spec and not (existed and old[n][e]) then
      removed = removed + remove_entry(n, e)
    end
  end
  if not existed and ids_key ~= '' then removed = removed + redis.call('SREM', ids_key, member) end
  return removed
end
