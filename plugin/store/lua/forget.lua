-- forget: remove everything the store keeps about one app, atomically: its observations
-- (and their entries in the job index), state, curve, kill-guard counts and limit safety,
-- censored runs, index entry and dirty mark, and leave
-- a tombstone with the time, so that its runs that ended before now are not counted again
-- (add_observations skips them; the learner re-reads a window of finished jobs).
-- The decision stream is a log of what the daemon did and is left as it is.
--
-- KEYS[1]  adaptalloc:v2:app:{<app>}:obs    hash  job id -> observation JSON
-- KEYS[2]  adaptalloc:v2:app:{<app>}:runs   zset  job id -> end time
-- KEYS[3]  adaptalloc:v2:app:{<app>}:state  hash
-- KEYS[4]  adaptalloc:v2:app:{<app>}:curve  hash
-- KEYS[5]  adaptalloc:v2:app:{<app>}:guard  hash  kill-guard counts, limit safety
-- KEYS[6]  adaptalloc:v2:app:{<app>}:censored  hash  job id -> censored run JSON
-- KEYS[7]  adaptalloc:v2:apps             zset  the index
-- KEYS[8]  adaptalloc:v2:dirty            zset
-- KEYS[9]  adaptalloc:v2:jobs             hash  job id -> app
-- KEYS[10] adaptalloc:v2:app:{<app>}:forgotten  string  the tombstone
-- KEYS[11] adaptalloc:v2:app:{<app>}:types  set  node types with their own curve
-- KEYS[12], ...  adaptalloc:v2:app:{<app>}:curve:<type>  the per-type curves (read from KEYS[11])
-- ARGV[1]  the app key (string form)
-- ARGV[2]  now, Unix seconds
-- ARGV[3]  how long the tombstone lasts, seconds
-- Returns the number of keys and index entries removed (0: the app was unknown).

if tonumber(ARGV[2]) == nil or tonumber(ARGV[3]) == nil or tonumber(ARGV[3]) < 1 then
  return redis.error_reply('forget: bad ARGV')
end

local ids = redis.call('HKEYS', KEYS[1])
for i = 1, #ids, 1000 do
  redis.call('HDEL', KEYS[9], unpack(ids, i, math.min(i + 999, #ids)))
end
local removed = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
for i = 11, #KEYS do
  redis.call('DEL', KEYS[i])
end
removed = removed + redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('ZREM', KEYS[8], ARGV[1])
if removed > 0 then
  redis.call('SET', KEYS[10], ARGV[2], 'EX', math.floor(tonumber(ARGV[3])))
end
return removed
