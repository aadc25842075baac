-- Read unlock of a read-write lock (Redisson's RedissonReadLock release).
-- KEYS[1] = lock key, KEYS[2] = the lock's channel, KEYS[3] = my timeout
-- key prefix, KEYS[4] = every holder's timeout key prefix (`{lock}`),
-- ARGV[1] = the message, ARGV[2] = my field.
-- Returns my holds left (0: I hold it no more), or -1 when the lock is
-- there and I am not among its holders. A lock already gone counts as
-- released, and wakes the waiters.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('publish', KEYS[2], ARGV[1])
    return 0
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return -1
end
local mine = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if mine == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (mine + 1))
if redis.call('hlen', KEYS[1]) > 1 then
    -- Other holds remain: the hash lives as long as the longest of their
    -- timeout keys. Holds whose keys have all expired count for nothing.
    local longest = -3
    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
        local count = tonumber(redis.call('hget', KEYS[1], field))
        if type(count) == 'number' then
            for n = count, 1, -1 do
                local left = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. n)
                longest = math.max(left, longest)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        return mine
    end
    if mode == 'write' then
        return mine
    end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return mine
