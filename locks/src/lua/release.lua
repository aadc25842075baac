-- Owner-checked release: delete the lock only if it still holds my token.
-- KEYS[1] = lock key, ARGV[1] = my token. Returns 1 if deleted, 0 if not mine.
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
else
    return 0
end
