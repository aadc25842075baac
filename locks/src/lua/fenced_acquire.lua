-- Acquire with a fencing token: SET NX PX and, only if it set the key,
-- INCR the counter in the same atomic script.
-- KEYS[1] = lock key, KEYS[2] = fence counter key, ARGV[1] = my token,
-- ARGV[2] = ttl in ms. Returns the new fencing token, or nil if the lock is taken.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return redis.call('incr', KEYS[2])
end
return nil
