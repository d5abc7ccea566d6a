-- save_curve: store a refitted curve (or the note that none can be fitted) unless a curve
-- from the same or newer observations is already stored: compare-and-set on the
-- observation version, so two learners never clobber each other and the newest
-- observations win. Only the app's keys ({<app>}, one Redis Cluster slot); when the stored
-- fit is as new as the observations, the caller clears the app's dirty mark with
-- clear_dirty.lua (its header says why the split is safe).
--
-- KEYS[1]  adaptalloc:v2:app:{<app>}:curve  hash  curve, version, obs_version, fitted_at, ...
-- KEYS[2]  adaptalloc:v2:app:{<app>}:state  hash  obs_version (the current one); no
--          obs_version: the app has no observations (never had, or was forgotten)
-- KEYS[3]  adaptalloc:v2:app:{<app>}:types  set   node types with a curve of their own
--          (KEYS[1] is then adaptalloc:v2:app:{<app>}:curve:<type>)
-- ARGV[1]  obs_version the fit was computed from
-- ARGV[2]  curve JSON (predictor.Curve.to_dict()), or '' when no curve can be fitted
-- ARGV[3]  fitted_at, Unix seconds
-- ARGV[4]  number of observations fitted
-- ARGV[5]  method (adept, lm)
-- ARGV[6]  reliable: '1' or '0'
-- ARGV[7]  note: why there is no curve ('' otherwise)
-- ARGV[8]  node type of a per-type curve, '' for the app's curve over all runs; a per-type
--          save never clears the dirty mark (the all-runs curve, saved last, does)
-- ARGV[9]  optional: the app's added_total (state) the fit's observations were read with, kept
--          as the curve's added_total, so the learner's refit cadence counts the runs added
--          since (policies/refit_cadence.py); absent or '': not kept
-- Returns {status, version, fitted}: status 1 written, 0 stale (kept the stored one), -1
-- forgotten; fitted the obs_version of the stored fit when the dirty mark may go (it is of
-- the current observations and this is the all-runs curve), else -1.

local based, node_type = tonumber(ARGV[1]), ARGV[8] or ''
local clears = node_type == ''
if not clears and KEYS[3] == nil then
  return redis.error_reply('save_curve: a per-type curve needs KEYS[3]')
end
if based == nil or tonumber(ARGV[3]) == nil or tonumber(ARGV[4]) == nil then
  return redis.error_reply('save_curve: bad ARGV')
end
local current = tonumber(redis.call('HGET', KEYS[2], 'obs_version') or '')
if current == nil then
  return {-1, 0, -1}
end
local stored = tonumber(redis.call('HGET', KEYS[1], 'obs_version') or '-1')
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if stored >= based then
  if stored == current and clears then
    return {0, version, stored}
  end
  return {0, version, -1}
end

if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'curve')
else
  redis.call('HSET', KEYS[1], 'curve', ARGV[2])
end
redis.call('HSET', KEYS[1], 'obs_version', based, 'fitted_at', ARGV[3],
  'n_observations', ARGV[4], 'method', ARGV[5], 'reliable', ARGV[6], 'note', ARGV[7])
if tonumber(ARGV[9] or '') ~= nil then
  redis.call('HSET', KEYS[1], 'added_total', ARGV[9])
else
  redis.call('HDEL', KEYS[1], 'added_total')
end
version = redis.call('HINCRBY', KEYS[1], 'version', 1)
if not clears then
  redis.call('SADD', KEYS[3], node_type)
end
if based == current and clears then
  return {1, version, based}
end
return {1, version, -1}
