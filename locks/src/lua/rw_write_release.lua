-- Write unlock of a read-write lock (Redisson's RedissonWriteLock release).
-- KEYS[1] = lock key, KEYS[2] = the lock's channel, ARGV[1] = the message,
-- ARGV[2] = lease in ms, ARGV[3] = my write field.
-- Returns my holds left (0: I hold it no more), or -1 when the lock is
-- there and not mine to write. A lock already gone counts as released.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('publish', KEYS[2], ARGV[1])
    return 0
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return -1
end
local mine = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if mine > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return mine
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call('publish', KEYS[2], ARGV[1])
else
    -- The writer also holds read locks of its own: it stays a reader.
    redis.call('hset', KEYS[1], 'mode', 'read')
end
return 0
