-- Reentrant release on a hash that wakes waiters when the key is deleted
-- (Redisson's unlockInnerAsync publishes the same way).
-- KEYS[1] = lock key, ARGV[1] = ttl in ms, ARGV[2] = my owner field,
-- ARGV[3] = release channel. Returns -1 if my field is absent, else the hold
-- count left (0: deleted and published).
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return count
end
redis.call('del', KEYS[1])
redis.call('publish', ARGV[3], '1')
return 0
