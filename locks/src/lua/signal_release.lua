-- python-redis-lock's release: when the lock holds my id, leave exactly one
-- element in the signal list (emptied first, then pushed, then given a
-- short life) for one waiter's BLPOP, and delete the lock; else touch
-- nothing. KEYS[1] = lock key, KEYS[2] = signal list, ARGV[1] = my id,
-- ARGV[2] = the signal's life in ms. Returns 0 when released, 1 when the
-- lock is not mine (or gone).
if redis.call('get', KEYS[1]) ~= ARGV[1] then
    return 1
end
redis.call('del', KEYS[2])
redis.call('lpush', KEYS[2], 1)
redis.call('pexpire', KEYS[2], ARGV[2])
redis.call('del', KEYS[1])
return 0
