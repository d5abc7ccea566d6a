-- add_observations: add one app's observations, each job id at most once across all apps,
-- then age out and trim its oldest ones, and mark the app dirty when they changed.
-- One script, so a crash (or a second learner) never sees half of it.
--
-- KEYS[1]  adaptalloc:v2:app:{<app>}:obs    hash  job id -> observation JSON
-- KEYS[2]  adaptalloc:v2:app:{<app>}:runs   zset  job id -> end time
-- KEYS[3]  adaptalloc:v2:app:{<app>}:state  hash  obs_version, added_total, updated_at
-- KEYS[4]  adaptalloc:v2:apps             zset  app -> end time of its latest run
-- KEYS[5]  adaptalloc:v2:dirty            zset  app -> when it first needed a refit
-- KEYS[6]  adaptalloc:v2:jobs             hash  job id -> app that counted it
-- KEYS[7]  adaptalloc:v2:app:{<app>}:forgotten  string  when the app was forgotten, if it was
-- ARGV[1]  the app key (string form)
-- ARGV[2]  now, Unix seconds
-- ARGV[3]  most observations kept for the app (the newest by end time)
-- ARGV[4]  oldest end time kept, Unix seconds, or '-inf' to keep every age
-- ARGV[5], ARGV[6], ARGV[7], ...  triples: job id, end time, observation JSON
-- Returns {added, duplicates, removed}: new job ids kept, job ids already counted (by this
-- or another app) or ended before the app was forgotten, and older observations removed by
-- ageing and trimming.

local app, now, cap, oldest = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]

local function drop(ids)
  for i = 1, #ids, 1000 do
    local last = math.min(i + 999, #ids)
    redis.call('HDEL', KEYS[1], unpack(ids, i, last))
    redis.call('HDEL', KEYS[6], unpack(ids, i, last))
    redis.call('ZREM', KEYS[2], unpack(ids, i, last))
  end
end

-- Check every argument before the first write: Redis does not roll a script back when it
-- fails halfway.
if cap == nil or cap < 1 or tonumber(now) == nil or (oldest ~= '-inf' and tonumber(oldest) == nil)
    or (#ARGV - 4) % 3 ~= 0 then
  return redis.error_reply('add_observations: bad ARGV')
end
for i = 5, #ARGV, 3 do
  if ARGV[i] == '' or tonumber(ARGV[i + 1]) == nil or ARGV[i + 2] == '' then
    return redis.error_reply('add_observations: bad observation at ARGV[' .. i .. ']')
  end
end

local forgotten = tonumber(redis.call('GET', KEYS[7]) or '')
local new_ids, duplicates = {}, 0
for i = 5, #ARGV, 3 do
  local id, ended, doc = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if forgotten ~= nil and tonumber(ended) <= forgotten then
    duplicates = duplicates + 1
  elseif oldest == '-inf' or tonumber(ended) >= tonumber(oldest) then
    if redis.call('HSETNX', KEYS[6], id, app) == 1 then
      redis.call('HSET', KEYS[1], id, doc)
      redis.call('ZADD', KEYS[2], ended, id)
      new_ids[#new_ids + 1] = id
    else
      duplicates = duplicates + 1
    end
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
  redis.call('ZADD', KEYS[5], 'NX', now, app)
end
if added > 0 then
  local latest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  redis.call('ZADD', KEYS[4], latest[2], app)
end
return {added, duplicates, removed}
