-- clear_dirty: the global half of saving a curve (curves.py save_curve): take the app off
-- the refit queue once save_curve.lua found its stored fit as new as its observations.
-- Global slot only ({global}), so it runs on Redis Cluster.
--
-- Why the split is safe: observations added after the fit read mark the app with their
-- obs_version (index_app.lua); the mark is cleared only when no newer version marked it,
-- whichever of the two runs first. A crash before this step leaves the app dirty: one
-- more refit, which finds the stored fit current and clears it.
--
-- KEYS[1]  adaptalloc:v2:{global}:dirty          zset  app -> when it first needed a refit
-- KEYS[2]  adaptalloc:v2:{global}:dirty:version  hash  app -> newest obs_version marking it
-- ARGV[1]  the app key (string form)
-- ARGV[2]  the obs_version the stored fit is from
-- Returns 1 cleared, 0 left (newer observations marked it, or it was not dirty).

local app, fitted = ARGV[1], tonumber(ARGV[2])
if app == nil or app == '' or fitted == nil then
  return redis.error_reply('clear_dirty: bad ARGV')
end
local marked = tonumber(redis.call('HGET', KEYS[2], app) or '-1')
if marked > fitted then
  return 0
end
redis.call('HDEL', KEYS[2], app)
return redis.call('ZREM', KEYS[1], app)
