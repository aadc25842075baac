-- Write lock of a read-write lock (Redisson's RedissonWriteLock acquire).
-- The lock is one hash: field `mode` (`read` or `write`) and a hold count
-- per holder; a writer's field is its owner field with `:write` after it.
-- KEYS[1] = lock key, ARGV[1] = lease in ms, ARGV[2] = my write field.
-- Returns {1, hold count} when I hold it now, {0, remaining ttl in ms} when
-- readers or another writer hold it.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, 1}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    -- Redisson adds a whole lease to what is left, where the plain lock
    -- re-arms it.
    local left = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], left + ARGV[1])
    return {1, count}
end
return {0, redis.call('pttl', KEYS[1])}
