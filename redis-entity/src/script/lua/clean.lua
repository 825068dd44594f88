-- Body: remove index entries a reader found stale. Arguments after the
-- common ones: pairs of index number and escaped value; each entry goes
-- unless the stored value needs it. Returns how many were removed.
local function clean(keys, args, first, last)
  local w = begin(keys, args, first)
  if not w.existed and w.ghost then
    -- The entity expired: every entry its shadow lists goes, not only those
    -- the reader met.
    unindex_all(w)
    redis.call('DEL', w.shadow)
    redis.call('ZREM', w.expiry_key, w.member)
  end
  local removed = 0
  for j = w.a + 1, last, 2 do
    local n, e = tonumber(w.A[j]), w.A[j + 1]
    local spec = T.idx[n]
    if spec and spec.kind == 'p' then
      -- A reader knows the prefix it searched, not the stale value: remove
      -- every entry of this member in that range that the stored value does
      -- not need.
      for _, entry in ipairs(redis.call('ZRANGEBYLEX', w.pre[n], '[' .. e, '(' .. e .. '\255')) do
        local sep = string.find(entry, ':', 1, true)
        if sep and string.sub(entry, sep + 1) == w.member then
          local v = string.sub(entry, 1, sep - 1)
          if not (w.existed and w.old[n][v]) then removed = removed + redis.call('ZREM', w.pre[n], entry) end
        end
      end
    elseif spec and spec.kind == 's' then
      -- A sorted entry with a wrong score is rewritten from the stored value;
      -- one whose stored value is not a number (or gone) is removed.
      local v = w.existed and next(w.old[n])
      if v and tonumber(v) then
        add_entry(w, n, v)
      else
        removed = removed + remove_entry(w, n, e)
      end
    elseif spec and not (w.existed and w.old[n][e]) then
      removed = removed + remove_entry(w, n, e)
    end
  end
  if not w.existed and w.ids_key ~= '' then removed = removed + ids_remove(w) end
  return removed
end
