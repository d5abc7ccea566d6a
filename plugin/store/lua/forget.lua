-- forget: remove everything the store keeps about one app's own keys, atomically: its
-- observations, state, curves, kill-guard counts and limit safety, censored runs, and leave
-- a tombstone with the time, so that its runs that ended before now are not counted again
-- (add_observations skips them; the learner re-reads a window of finished jobs). Only the
-- app's keys ({<app>}, one Redis Cluster slot); forget_index.lua then removes its entries in
-- the global indexes (its header says why the split is safe). The decision stream is a log
-- of what the daemon did and is left as it is.
--
-- KEYS[1]  adaptalloc:v2:app:{<app>}:obs    hash  job id -> observation JSON
-- KEYS[2]  adaptalloc:v2:app:{<app>}:runs   zset  job id -> end time
-- KEYS[3]  adaptalloc:v2:app:{<app>}:state  hash
-- KEYS[4]  adaptalloc:v2:app:{<app>}:curve  hash
-- KEYS[5]  adaptalloc:v2:app:{<app>}:guard  hash  kill-guard counts, limit safety
-- KEYS[6]  adaptalloc:v2:app:{<app>}:censored  hash  job id -> censored run JSON
-- KEYS[7]  adaptalloc:v2:app:{<app>}:forgotten  string  the tombstone
-- KEYS[8]  adaptalloc:v2:app:{<app>}:types  set  node types with their own curve
-- KEYS[9], ...  adaptalloc:v2:app:{<app>}:curve:<type>  the per-type curves (read from KEYS[8])
-- ARGV[1]  now, Unix seconds
-- ARGV[2]  how long the tombstone lasts, seconds
-- Returns {keys removed, job id, ...}: the job ids of its observations, for forget_index.lua.

if tonumber(ARGV[1]) == nil or tonumber(ARGV[2]) == nil or tonumber(ARGV[2]) < 1 then
  return redis.error_reply('forget: bad ARGV')
end

local ids = redis.call('HKEYS', KEYS[1])
local removed = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
for i = 8, #KEYS do
  redis.call('DEL', KEYS[i])
end
if removed > 0 then
  redis.call('SET', KEYS[7], ARGV[1], 'EX', math.floor(tonumber(ARGV[2])))
end
local reply = {removed}
for _, id in ipairs(ids) do
  reply[#reply + 1] = id
end
return reply
