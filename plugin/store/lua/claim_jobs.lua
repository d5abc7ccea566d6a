-- claim_jobs: step 1 of adding an app's observations (curves.py add_batch): count each job
-- id for one app at most once across all apps. Global slot only ({global}), so it runs on
-- Redis Cluster; the app's own keys are written by add_observations.lua (step 2), and the
-- indexes by index_app.lua (step 3).
--
-- Why the split is safe: a claim is idempotent and returns the ids this app owns, whether
-- it claimed them now or earlier; add_observations.lua writes only ids not yet in the
-- app's hash. A crash after the claim leaves ids claimed but not written: the learner
-- re-reads its window of finished jobs, claims them again (its own already), and writes
-- them then. Ids the app claimed but does not keep (ended before it was forgotten, aged
-- out, trimmed) are released by index_app.lua.
--
-- An app that owns an id here is put in the app index (score 0 if it was not there) before
-- any of its keys is written, so a crash after step 2 leaves no key outside the index: the
-- app is listed, aged out and forgotten like any other, and the next call for it (age_out
-- visits every indexed app) completes its entry, or removes it when step 2 wrote nothing
-- (index_app.lua).
--
-- KEYS[1]  adaptalloc:v2:{global}:jobs  hash  job id -> app that counted it
-- KEYS[2]  adaptalloc:v2:{global}:apps  zset  app -> end time of its latest run
-- ARGV[1], ...  groups, one per app: the app key (string form), n, then n job ids (one call for
--          many apps: the client's cost is per command)
-- Returns, per group, the job ids (of its ARGV) the app owns: claimed now or by itself before.

local i, out = 1, {}
while i <= #ARGV do
  local app, n = ARGV[i], tonumber(ARGV[i + 1])
  if app == nil or app == '' or n == nil or n < 0 or i + 1 + n > #ARGV then
    return redis.error_reply('claim_jobs: bad ARGV at ' .. i)
  end
  local ours = {}
  for k = i + 2, i + 1 + n do
    if redis.call('HSETNX', KEYS[1], ARGV[k], app) == 1 or redis.call('HGET', KEYS[1], ARGV[k]) == app then
      ours[#ours + 1] = ARGV[k]
    end
  end
  if #ours > 0 then
    redis.call('ZADD', KEYS[2], 'NX', 0, app)
  end
  out[#out + 1] = ours
  i = i + 2 + n
end
return out
