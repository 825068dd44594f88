#!lua flags=no-writes
-- redis-entity: a unique lookup in one call, where the entity key can be
-- spelled from its member (one server, a hash-layout type without #[hash]
-- maps): the member the unique key names and that entity's hash, read
-- together, so that the lookup is one round trip instead of two.
--
-- KEYS[1]: the unique key (a string: the owner's member).
-- ARGV[1], ARGV[2]: the head and tail of the type's entity keys (the owner's
--   key is head .. member .. tail).
-- ARGV[3..]: the fields a read of the type asks for (keyspace::hash_fields),
--   none for a type read whole (keyspace::reads_by_fields).
-- Returns: {} when no entity owns the value; otherwise { member, values },
--   the values as HMGET answers them (an absent field is false, which the
--   reply turns back into nil), or the hash as HGETALL answers it. A key of another type fails the call
--   with the server's WRONGTYPE, which names no key: the client then reads
--   the two keys apart, and the one that fails names itself
--   (store/lookup.rs). Without the `call` of lua/naming_call.lua, which
--   the other read scripts use, the lookup is the minimal script a
--   careful engineer writes for it (no closure made and no pcall per
--   call; benches/NOTES.md, *The lookup script without `call`, and the
--   general code compiled on first use*).
local owner = redis.call('GET', KEYS[1])
if not owner then return {} end
local key = ARGV[1] .. owner .. ARGV[2]
if #ARGV == 2 then return { owner, redis.call('HGETALL', key) } end
return { owner, redis.call('HMGET', key, unpack(ARGV, 3)) }
