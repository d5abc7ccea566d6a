-- index_app: step 3 of adding an app's observations (curves.py add_batch): bring the
-- global indexes up to what add_observations.lua (step 2) found in the app's keys. Global
-- slot only ({global}), so it runs on Redis Cluster. Idempotent: running it again, or
-- after a crash, with step 2's reply gives the same indexes.
--
-- KEYS[1]  adaptalloc:v2:{global}:apps           zset  app -> end time of its latest run
-- KEYS[2]  adaptalloc:v2:{global}:dirty          zset  app -> when it first needed a refit
-- KEYS[3]  adaptalloc:v2:{global}:dirty:version  hash  app -> newest obs_version marking it
-- KEYS[4]  adaptalloc:v2:{global}:jobs           hash  job id -> app that counted it
-- ARGV[1]  now, Unix seconds
-- ARGV[2], ...  groups, one per app (one call for many apps: the client's cost is per
--          command): the app key (string form); its obs_version (step 2); '1' when it needs
--          a refit (its curve is older than its observations); the end time of its newest
--          run ('' when it has none); n; then n job ids to release from the job index (only
--          where they name this app)
-- An app put in the app index by claim_jobs.lua whose keys hold nothing (obs_version 0, no
-- run: step 2 never ran, or wrote nothing) leaves the index again: the app is as it was.
-- Returns the number of job ids released.

local now, released, i = ARGV[1], 0, 2
if tonumber(now) == nil then
  return redis.error_reply('index_app: bad ARGV')
end
-- Check every group before the first write: Redis does not roll a script back.
while i <= #ARGV do
  local n = tonumber(ARGV[i + 4])
  if ARGV[i] == nil or ARGV[i] == '' or tonumber(ARGV[i + 1]) == nil or n == nil or n < 0
      or (ARGV[i + 3] ~= '' and tonumber(ARGV[i + 3]) == nil) or i + 4 + n > #ARGV then
    return redis.error_reply('index_app: bad ARGV at ' .. i)
  end
  i = i + 5 + n
end
i = 2
while i <= #ARGV do
  local app, version, latest, n = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 3], tonumber(ARGV[i + 4])
  if ARGV[i + 2] == '1' then
    redis.call('ZADD', KEYS[2], 'NX', now, app)
    local marked = tonumber(redis.call('HGET', KEYS[3], app) or '-1')
    if version > marked then
      redis.call('HSET', KEYS[3], app, version)
    end
  end
  if latest ~= '' then
    redis.call('ZADD', KEYS[1], latest, app)
  elseif version == 0 and tonumber(redis.call('ZSCORE', KEYS[1], app) or '-1') == 0 then
    redis.call('ZREM', KEYS[1], app)  -- only claim_jobs.lua's placeholder (score 0)
  end
  for k = i + 5, i + 4 + n do
    if redis.call('HGET', KEYS[4], ARGV[k]) == app then
      released = released + redis.call('HDEL', KEYS[4], ARGV[k])
    end
  end
  i = i + 5 + n
end
return released
