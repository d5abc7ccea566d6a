-- forget_index: the global half of forgetting an app (curves.py forget), after forget.lua
-- removed its keys and left the tombstone: its index entry, dirty mark and job ids. Global
-- slot only ({global}), so it runs on Redis Cluster.
--
-- Why the split is safe: forget.lua runs first, so from then on no run of the app that
-- ended before now is stored again (the tombstone). A crash before this step leaves the
-- app in the index with no keys (shown with no observations) and its job ids in the job
-- index; forgetting it again removes the entry, and the learner's next re-read of those
-- jobs releases their ids (add_observations.lua skips them by the tombstone and
-- index_app.lua releases them). Job ids claimed by another app are left alone.
--
-- KEYS[1]  adaptalloc:v2:{global}:apps           zset
-- KEYS[2]  adaptalloc:v2:{global}:dirty          zset
-- KEYS[3]  adaptalloc:v2:{global}:dirty:version  hash
-- KEYS[4]  adaptalloc:v2:{global}:jobs           hash  job id -> app
-- ARGV[1]  the app key (string form)
-- ARGV[2], ...  the app's job ids (forget.lua's reply)
-- Returns 1 when the app was in the index, else 0.

local app = ARGV[1]
if app == nil or app == '' then
  return redis.error_reply('forget_index: bad ARGV')
end
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[4], ARGV[i]) == app then
    redis.call('HDEL', KEYS[4], ARGV[i])
  end
end
redis.call('ZREM', KEYS[2], app)
redis.call('HDEL', KEYS[3], app)
return redis.call('ZREM', KEYS[1], app)
