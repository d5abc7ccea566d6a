-- forget: remove everything the store keeps about one app, atomically: its observations
-- (and their entries in the job index), state, curve, index entry and dirty mark.
-- The decision stream is a log of what the daemon did and is left as it is.
--
-- KEYS[1]  adaptalloc:v1:app:<app>:obs    hash  job id -> observation JSON
-- KEYS[2]  adaptalloc:v1:app:<app>:runs   zset  job id -> end time
-- KEYS[3]  adaptalloc:v1:app:<app>:state  hash
-- KEYS[4]  adaptalloc:v1:app:<app>:curve  hash
-- KEYS[5]  adaptalloc:v1:apps             zset  the index
-- KEYS[6]  adaptalloc:v1:dirty            zset
-- KEYS[7]  adaptalloc:v1:jobs             hash  job id -> app
-- ARGV[1]  the app key (string form)
-- Returns the number of keys and index entries removed (0: the app was unknown).

local ids = redis.call('HKEYS', KEYS[1])
for i = 1, #ids, 1000 do
  redis.call('HDEL', KEYS[7], unpack(ids, i, math.min(i + 999, #ids)))
end
local removed = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
removed = removed + redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
return removed
