-- The general code (lua/key_types.lua, lua/write_shared.lua, the prelude,
-- the batch loop and the bodies) of a type the straight-line code covers,
-- compiled on the first call that runs it: most calls never do (an entity
-- with a TTL, a condition, a version check, a request token, a delete, a
-- reindex, ... do). Compiled at load, it was about three quarters of the
-- library's memory in the functions' Lua VM, which the VM's garbage
-- collector walks and the server's caches hold for every call, whatever
-- it runs (benches/NOTES.md, *The lookup script without `call`, and the
-- general code compiled on first use*). GENERAL_CODE is a chunk that takes
-- T and ESCAPED and returns its entry points; script/write.rs writes it
-- here as a long string. Nothing is written before it compiles: a server
-- without `loadstring` (Redis and Valkey keep it) fails the call there.
local GENERAL
local function general()
  if not GENERAL then
    -- Named as the server names a library's own code, so that an error
    -- raised in it carries the location the client cuts from messages
    -- (`on @user_function:NN`, error.rs).
    GENERAL = assert(loadstring(GENERAL_CODE, '@user_function'))(T, ESCAPED)
    -- Its text (about 40 KB) is not read again: the collector frees it.
    GENERAL_CODE = nil
  end
  return GENERAL
end
