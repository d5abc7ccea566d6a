-- add_observations: step 2 of adding an app's observations (curves.py add_batch): write the
-- job ids claim_jobs.lua gave this app, age out and trim its oldest ones, and report what
-- the global indexes need (index_app.lua, step 3). Only the app's keys ({<app>}, one Redis
-- Cluster slot), atomically, so a crash or a second learner never sees half of it.
--
-- Why the split is safe: what step 3 needs is derived from the app's keys every time, not
-- from what this call changed: "needs a refit" is its obs_version being newer than its
-- curve's, and the latest end time is read from its runs. So a crash before step 3 is
-- healed by the next call for the app (the learner re-reads recent jobs; age_out visits
-- every app).
--
-- KEYS[1]  adaptalloc:v2:app:{<app>}:obs        hash  job id -> observation JSON
-- KEYS[2]  adaptalloc:v2:app:{<app>}:runs       zset  job id -> end time
-- KEYS[3]  adaptalloc:v2:app:{<app>}:state      hash  obs_version, added_total, updated_at
-- KEYS[4]  adaptalloc:v2:app:{<app>}:forgotten  string  when the app was forgotten, if it was
-- KEYS[5]  adaptalloc:v2:app:{<app>}:curve      hash  obs_version of the stored fit
-- ARGV[1]  now, Unix seconds
-- ARGV[2]  most observations kept for the app (the newest by end time)
-- ARGV[3]  oldest end time kept, Unix seconds, or '-inf' to keep every age
-- ARGV[4], ARGV[5], ARGV[6], ...  triples: job id, end time, observation JSON (ids the app
--          owns in the job index, from claim_jobs.lua)
-- Returns {added, duplicates, removed, obs_version, needs_refit (0/1), latest end time or '',
-- released id, ...}: new job ids kept; ids already stored or ended before the app was
-- forgotten; older observations removed by ageing and trimming; the app's observation
-- version afterwards; whether its curve is older than its observations; the end time of
-- its newest run ('' when it has none); then the ids the job index should no longer give
-- to this app (not kept, or removed).

local now, cap, oldest = ARGV[1], tonumber(ARGV[2]), ARGV[3]

-- Check every argument before the first write: Redis does not roll a script back when it
-- fails halfway.
if cap == nil or cap < 1 or tonumber(now) == nil or (oldest ~= '-inf' and tonumber(oldest) == nil)
    or (#ARGV - 3) % 3 ~= 0 then
  return redis.error_reply('add_observations: bad ARGV')
end
for i = 4, #ARGV, 3 do
  if ARGV[i] == '' or tonumber(ARGV[i + 1]) == nil or ARGV[i + 2] == '' then
    return redis.error_reply('add_observations: bad observation at ARGV[' .. i .. ']')
  end
end

local released = {}
local function drop(ids)
  for i = 1, #ids, 1000 do
    local last = math.min(i + 999, #ids)
    redis.call('HDEL', KEYS[1], unpack(ids, i, last))
    redis.call('ZREM', KEYS[2], unpack(ids, i, last))
  end
  for _, id in ipairs(ids) do
    released[#released + 1] = id
  end
end

local forgotten = tonumber(redis.call('GET', KEYS[4]) or '')
local new_ids, duplicates = {}, 0
for i = 4, #ARGV, 3 do
  local id, ended, doc = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if forgotten ~= nil and tonumber(ended) <= forgotten then
    duplicates = duplicates + 1
    released[#released + 1] = id
  elseif oldest ~= '-inf' and tonumber(ended) < tonumber(oldest) then
    released[#released + 1] = id
  elseif redis.call('HEXISTS', KEYS[1], id) == 1 then
    duplicates = duplicates + 1
  else
    redis.call('HSET', KEYS[1], id, doc)
    redis.call('ZADD', KEYS[2], ended, id)
    new_ids[#new_ids + 1] = id
  end
end

local removed = 0
if oldest ~= '-inf' then
  local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. oldest)
  drop(old)
  removed = removed + #old
end
local count = redis.call('ZCARD', KEYS[2])
if count > cap then
  local extra = redis.call('ZRANGE', KEYS[2], 0, count - cap - 1)
  drop(extra)
  removed = removed + #extra
end

local added = 0
for _, id in ipairs(new_ids) do
  if redis.call('HEXISTS', KEYS[1], id) == 1 then
    added = added + 1
  end
end
removed = removed - (#new_ids - added)  -- new ones trimmed at once were never really added

if added > 0 or removed > 0 then
  redis.call('HINCRBY', KEYS[3], 'obs_version', 1)
  redis.call('HINCRBY', KEYS[3], 'added_total', added)
  redis.call('HSET', KEYS[3], 'updated_at', now)
end
local version = tonumber(redis.call('HGET', KEYS[3], 'obs_version') or '0')
local fitted = tonumber(redis.call('HGET', KEYS[5], 'obs_version') or '-1')
local needs_refit = 0
if version > 0 and fitted < version then
  needs_refit = 1
end
local latest = ''
local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if #newest == 2 then
  latest = newest[2]
end
local reply = {added, duplicates, removed, version, needs_refit, latest}
for _, id in ipairs(released) do
  reply[#reply + 1] = id
end
return reply
