-- redis-entity: add a score on a board bucket and set the bucket's expiry.
--
-- KEYS[1]: the bucket (a sorted set). ARGV: the delta, the member, the
-- bucket's expiry (unix ms). Returns the new score.
--
-- ZINCRBY goes first: on a key of the wrong type it fails, and the script
-- stops before the expiry is set, so a refused increment writes nothing.
local score = redis.call('ZINCRBY', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return score
