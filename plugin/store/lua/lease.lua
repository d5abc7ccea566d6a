-- lease: the HA daemons' lease, taken, renewed and given up atomically (plugin/daemon/lease.py).
-- KEYS[1]  adaptalloc:v2:{global}:daemon:lease        string "<token> <holder>", with a TTL (PX)
-- KEYS[2]  adaptalloc:v2:{global}:daemon:lease:token  integer, the fencing-token counter (INCR, no TTL)
-- ARGV[1]  "acquire" | "renew" | "release"
-- ARGV[2]  acquire: the holder's name; renew, release: the value the holder got ("<token> <holder>")
-- ARGV[3]  the lease's TTL in milliseconds (acquire, renew)
-- Returns: acquire: the new token, or false while someone else holds the lease; the
-- counter only moves for a winner, so a token is never reused and always grows. A holder
-- whose own lease is still in the key (it stepped down on a Redis blip) takes it again
-- with a new token instead of waiting for it to expire; its old token is refused from then.
-- renew: 1 (PEXPIRE'd), or 0 when the lease is no longer this value (expired, taken over).
-- release: 1 (deleted), or 0 when it was not this value (someone else's lease is left alone).

local op = ARGV[1]
if op == 'acquire' then
    local current = redis.call('GET', KEYS[1])
    if current then
        local at = string.find(current, ' ', 1, true)
        if not at or string.sub(current, at + 1) ~= ARGV[2] then
            return false
        end
    end
    local token = redis.call('INCR', KEYS[2])
    redis.call('SET', KEYS[1], token .. ' ' .. ARGV[2], 'PX', ARGV[3])
    return token
end
if redis.call('GET', KEYS[1]) ~= ARGV[2] then
    return 0
end
if op == 'renew' then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return 1
end
if op == 'release' then
    redis.call('DEL', KEYS[1])
    return 1
end
return redis.error_reply('lease: unknown op ' .. tostring(op))
