-- redis-entity: add a score on a board bucket and set the bucket's expiry.
--
-- KEYS[1]: the bucket (a sorted set). ARGV: the delta, the member, the
-- bucket's expiry (unix ms). Returns the new score.
--
-- ZINCRBY goes first: on a key of the wrong type it fails, and the script
-- stops before the expiry is set, so a refused increment writes nothing.
-- (board_incr: lua/steps.lua, before this script.)
return board_incr(KEYS, ARGV, 0)
