-- redis-entity: the order of a post on a timeline that pulls the posts of
-- authors with many followers (hybrid fan-out): the next number of the
-- timeline's sequence, noted for the post, so that a reader's page merges
-- its pushed list with the pulled authors' own lists in push order.
--
-- KEYS[1]: the sequence (a string), KEYS[2]: the posts' numbers (a sorted
--          set, post member -> number), KEYS[3]: the pulled authors (a set)
-- ARGV: the post's member, how many numbers are kept (the newest), and the
--       author's member when its posts are pulled ('' when pushed)
-- Returns the post's number. The pulled set only grows: an author once
-- pulled stays pulled, so that no reader loses the posts already pulled.
local refused = wrong_types({ { KEYS[1], 'string' }, { KEYS[2], 'zset' }, { KEYS[3], 'set' } })
if refused then return refused end
local n = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], n, ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(ARGV[2]) + 1))
if ARGV[3] ~= '' then redis.call('SADD', KEYS[3], ARGV[3]) end
return n
