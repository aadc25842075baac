-- python-redis-lock's extend, with its error codes: 1 when the lock does
-- not hold my id (taken by another, or gone: expired), 2 when it holds my
-- id but has no expiry to extend, else re-arm the TTL and answer 0.
-- KEYS[1] = lock key, ARGV[1] = my id, ARGV[2] = ttl in ms.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
    return 1
end
if redis.call('pttl', KEYS[1]) < 0 then
    return 2
end
redis.call('pexpire', KEYS[1], ARGV[2])
return 0
