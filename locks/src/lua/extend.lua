-- Owner-checked extension: re-arm the TTL only if the lock still holds my token.
-- KEYS[1] = lock key, ARGV[1] = my token, ARGV[2] = ttl in ms. Returns 1 or 0.
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
else
    return 0
end
