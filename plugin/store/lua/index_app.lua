-- index_app: step 3 of adding an app's observations (curves.py add_batch): bring the
-- global indexes up to what add_observations.lua (step 2) found in the app's keys. Global
-- slot only ({global}), so it runs on Redis Cluster. Idempotent: running it again, or
-- after a crash, with step 2's reply gives the same indexes.
--
-- KEYS[1]  adaptalloc:v2:{global}:apps           zset  app -> end time of its latest run
-- KEYS[2]  adaptalloc:v2:{global}:dirty          zset  app -> when it first needed a refit
-- KEYS[3]  adaptalloc:v2:{global}:dirty:version  hash  app -> newest obs_version marking it
-- KEYS[4]  adaptalloc:v2:{global}:jobs           hash  job id -> app that counted it
-- ARGV[1]  the app key (string form)
-- ARGV[2]  now, Unix seconds
-- ARGV[3]  the app's obs_version (step 2)
-- ARGV[4]  '1' when the app needs a refit (its curve is older than its observations)
-- ARGV[5]  end time of its newest run, '' when it has none
-- ARGV[6], ...  job ids to release from the job index (only where they name this app)
-- Returns the number of job ids released.

local app, now, version, latest = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[5]
if app == nil or app == '' or tonumber(now) == nil or version == nil
    or (latest ~= '' and tonumber(latest) == nil) then
  return redis.error_reply('index_app: bad ARGV')
end
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[2], 'NX', now, app)
  local marked = tonumber(redis.call('HGET', KEYS[3], app) or '-1')
  if version > marked then
    redis.call('HSET', KEYS[3], app, version)
  end
end
if latest ~= '' then
  redis.call('ZADD', KEYS[1], latest, app)
end
local released = 0
for i = 6, #ARGV do
  if redis.call('HGET', KEYS[4], ARGV[i]) == app then
    released = released + redis.call('HDEL', KEYS[4], ARGV[i])
  end
end
return released
