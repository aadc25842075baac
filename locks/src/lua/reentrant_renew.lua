-- Owner-checked renewal of a hash lock (Redisson's renewExpirationAsync,
-- used by the watchdog and by extend). KEYS[1] = lock key,
-- ARGV[1] = ttl in ms, ARGV[2] = my owner field. Returns 1 if re-armed, 0 if not mine.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0
