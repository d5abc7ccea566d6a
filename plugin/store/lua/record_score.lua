-- record_score: append one finished job's score to the score stream, once per job.
-- Both keys are in the global slot ({global}), so it runs on Redis Cluster.
-- KEYS[1]  adaptalloc:v2:{global}:scored:<job>-<submit>  string, the once-guard (set with a TTL)
-- KEYS[2]  adaptalloc:v2:{global}:scores                 stream of scores
-- ARGV[1]  TTL of the guard, seconds
-- ARGV[2]  approximate MAXLEN of the stream
-- ARGV[3]  the key of the app whose curve decided
-- ARGV[4]  job id
-- ARGV[5]  the score document (JSON)
-- Returns the new entry's id, or false when this job was scored before (the learner
-- re-reads a window of finished jobs, and two learners may poll at once).

if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
    return false
end
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*',
    'app', ARGV[3], 'job_id', ARGV[4], 'doc', ARGV[5])
