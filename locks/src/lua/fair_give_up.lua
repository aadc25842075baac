-- A fair lock's waiter that gave up leaves the line (Redisson 3.5x
-- RedissonFairLock.acquireFailedAsync), and every waiter behind it, now
-- one place nearer the lock, gets one step less.
-- KEYS[1] = wait queue, KEYS[2] = timeout set.
-- ARGV[1] = my owner field, ARGV[2] = the step in ms (as in the acquire).
-- Returns how many entries of mine it removed from the queue.
local line = redis.call('lrange', KEYS[1], 0, -1)
local behind_me = false
for _, waiter in ipairs(line) do
    if behind_me then
        redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), waiter)
    elseif waiter == ARGV[1] then
        behind_me = true
    end
end
redis.call('zrem', KEYS[2], ARGV[1])
return redis.call('lrem', KEYS[1], 0, ARGV[1])
