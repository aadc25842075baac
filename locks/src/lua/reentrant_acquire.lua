-- Reentrant acquire on a hash (Redisson's tryLockInnerAsync).
-- KEYS[1] = lock key, ARGV[1] = ttl in ms, ARGV[2] = my owner field (client:task).
-- Returns {1, hold count} when acquired (first time or nested: Redisson returns
-- nil here; the count tells the lease its depth), {0, remaining ttl in ms} when
-- another owner holds it.
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, count}
end
return {0, redis.call('pttl', KEYS[1])}
