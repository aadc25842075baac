-- Reentrant release on a hash (Redisson's unlockInnerAsync).
-- KEYS[1] = lock key, ARGV[1] = ttl in ms, ARGV[2] = my owner field.
-- Returns -1 if my field is absent (not mine, or expired), else the hold
-- count left: > 0 means still held (TTL refreshed), 0 means the key is deleted.
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return count
end
redis.call('del', KEYS[1])
return 0
