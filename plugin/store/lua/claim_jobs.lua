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
-- KEYS[1]  adaptalloc:v2:{global}:jobs  hash  job id -> app that counted it
-- ARGV[1]  the app key (string form)
-- ARGV[2], ARGV[3], ...  job ids
-- Returns the job ids (of ARGV) this app owns: claimed now or by itself before.

local app, ours = ARGV[1], {}
if app == nil or app == '' then
  return redis.error_reply('claim_jobs: bad ARGV')
end
for i = 2, #ARGV do
  if redis.call('HSETNX', KEYS[1], ARGV[i], app) == 1 or redis.call('HGET', KEYS[1], ARGV[i]) == app then
    ours[#ours + 1] = ARGV[i]
  end
end
return ours
