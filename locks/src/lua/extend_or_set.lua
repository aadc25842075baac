-- redsync's extension with WithSetNXOnExtend: re-arm the TTL if the lock
-- holds my token, or take the lock again where it is gone altogether.
-- KEYS[1] = lock key, ARGV[1] = my token, ARGV[2] = ttl in ms. Returns 1 or 0.
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
elseif redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2], 'nx') then
    return 1
end
return 0
