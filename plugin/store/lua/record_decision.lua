-- record_decision: append one daemon decision to the decision stream, once per job.
-- Both keys are in the global slot ({global}), so it runs on Redis Cluster.
-- KEYS[1]  adaptalloc:v2:{global}:decided:<job>-<submit>  string, the once-guard (set with a TTL)
-- KEYS[2]  adaptalloc:v2:{global}:decisions               stream of decisions
-- ARGV[1]  TTL of the guard, seconds
-- ARGV[2]  approximate MAXLEN of the stream
-- ARGV[3]  app key ("" when the job had none)
-- ARGV[4]  job id
-- ARGV[5]  the decision document (JSON)
-- Returns the new entry's id, or false when this job's decision was recorded before.
-- The guard then holds the entry's id: the learner finds a finished job's decision by its
-- job id and submit time (plugin/learning/scoring.py) without scanning the stream.

if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
    return false
end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*',
    'app', ARGV[3], 'job_id', ARGV[4], 'doc', ARGV[5])
redis.call('SET', KEYS[1], id, 'EX', ARGV[1])
return id
