-- migrate_key: copy one v1 key to its v2 name, server-side (DUMP and RESTORE keep the type,
-- every member and the time to live; the payload never leaves Redis), unless the v2 key
-- exists already: a migration run again, or resumed after a crash, skips what it copied.
-- The v1 key is left as it is (v1 data is never dropped by the migration).
--
-- KEYS[1]  the v1 key, adaptalloc:v1:...
-- KEYS[2]  its v2 name, adaptalloc:v2:... (plugin/store/migrate.py maps the names)
-- ARGV  none
-- Returns 1 copied, 0 skipped (the v2 key exists), -1 the v1 key is gone (expired meanwhile).

if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local payload = redis.call('DUMP', KEYS[1])
if not payload then
  return -1
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then
  return -1
end
if ttl < 0 then
  ttl = 0
end
redis.call('RESTORE', KEYS[2], ttl, payload)
return 1
