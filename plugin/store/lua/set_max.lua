-- set_max: raise a numeric hash field to a value, never lower it (watermarks, checkpoints),
-- so concurrent learners or importers cannot move a watermark backwards.
--
-- KEYS[1]  a hash: adaptalloc:v2:{global}:learner:<source> or ...:{global}:import:<id>
-- ARGV[1]  the field
-- ARGV[2]  the new value (a number)
-- ARGV[3]  now, Unix seconds (stored as updated_at)
-- Returns the field's value afterwards, as a string.

if tonumber(ARGV[2]) == nil then
  return redis.error_reply('set_max: the value is not a number')
end
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored == false or tonumber(ARGV[2]) > tonumber(stored) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], 'updated_at', ARGV[3])
  return ARGV[2]
end
return stored
