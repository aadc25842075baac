-- Owner-checked release that also wakes waiters (the `notify` wait strategy):
-- delete the lock only if it still holds my token, then PUBLISH on the lock's
-- release channel, in the same atomic script (no extra round trip).
-- KEYS[1] = lock key, ARGV[1] = my token, ARGV[2] = release channel.
-- Returns 1 if deleted, 0 if not mine.
if redis.call('get', KEYS[1]) == ARGV[1] then
    redis.call('del', KEYS[1])
    redis.call('publish', ARGV[2], '1')
    return 1
else
    return 0
end
