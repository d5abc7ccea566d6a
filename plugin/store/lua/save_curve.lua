-- save_curve: store a refitted curve (or the note that none can be fitted) unless a curve
-- from the same or newer observations is already stored: compare-and-set on the
-- observation version, so two learners never clobber each other and the newest
-- observations win. Clears the app's dirty mark when nothing changed since the fit read.
--
-- KEYS[1]  adaptalloc:v2:app:{<app>}:curve  hash  curve, version, obs_version, fitted_at, ...
-- KEYS[2]  adaptalloc:v2:app:{<app>}:state  hash  obs_version (the current one)
-- KEYS[3]  adaptalloc:v2:apps             zset  the index: an app not in it was forgotten
-- KEYS[4]  adaptalloc:v2:dirty            zset  app -> when it first needed a refit
-- KEYS[5]  adaptalloc:v2:app:{<app>}:types  set   node types with a curve of their own
--          (KEYS[1] is then adaptalloc:v2:app:{<app>}:curve:<type>)
-- ARGV[1]  the app key (string form)
-- ARGV[2]  obs_version the fit was computed from
-- ARGV[3]  curve JSON (predictor.Curve.to_dict()), or '' when no curve can be fitted
-- ARGV[4]  fitted_at, Unix seconds
-- ARGV[5]  number of observations fitted
-- ARGV[6]  method (adept, lm)
-- ARGV[7]  reliable: '1' or '0'
-- ARGV[8]  note: why there is no curve ('' otherwise)
-- ARGV[9]  node type of a per-type curve, '' for the app's curve over all runs; a per-type
--          save never clears the dirty mark (the all-runs curve, saved last, does)
-- Returns {status, version}: status 1 written, 0 stale (kept the stored one), -1 forgotten.

local app, based, node_type = ARGV[1], tonumber(ARGV[2]), ARGV[9] or ''
local clears = node_type == ''
if not clears and KEYS[5] == nil then
  return redis.error_reply('save_curve: a per-type curve needs KEYS[5]')
end
if based == nil or tonumber(ARGV[4]) == nil or tonumber(ARGV[5]) == nil then
  return redis.error_reply('save_curve: bad ARGV')
end
if redis.call('ZSCORE', KEYS[3], app) == false then
  return {-1, 0}
end
local current = tonumber(redis.call('HGET', KEYS[2], 'obs_version') or '0')
local stored = tonumber(redis.call('HGET', KEYS[1], 'obs_version') or '-1')
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if stored >= based then
  if stored == current and clears then
    redis.call('ZREM', KEYS[4], app)
  end
  return {0, version}
end

if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], 'curve')
else
  redis.call('HSET', KEYS[1], 'curve', ARGV[3])
end
redis.call('HSET', KEYS[1], 'obs_version', based, 'fitted_at', ARGV[4],
  'n_observations', ARGV[5], 'method', ARGV[6], 'reliable', ARGV[7], 'note', ARGV[8])
version = redis.call('HINCRBY', KEYS[1], 'version', 1)
if not clears then
  redis.call('SADD', KEYS[5], node_type)
end
if based == current and clears then
  redis.call('ZREM', KEYS[4], app)
end
return {1, version}
