-- A fair lock's release (Redisson 3.5x RedissonFairLock.unlockInnerAsync,
-- without its unlock latch): sweep the line as the acquire does, give one
-- hold back, and when the lock goes, tell the head of the line on its own
-- channel.
-- KEYS[1] = lock hash, KEYS[2] = wait queue, KEYS[3] = timeout set.
-- ARGV[1] = my owner field, ARGV[2] = lease ttl in ms, ARGV[3] = the
-- caller's wall clock in ms, ARGV[4] = the lock's channel (the head's is
-- this, ':' and its owner field).
-- Returns the holds left (0: the lock is gone, and so when it had already
-- expired: Redisson reports that as released), or -1 when another owner
-- holds the lock.
local now = tonumber(ARGV[3])
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if not head then
        break
    end
    local deadline = redis.call('zscore', KEYS[3], head)
    if not deadline or tonumber(deadline) > now then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end

local function wake_the_head()
    local head = redis.call('lindex', KEYS[2], 0)
    if head then
        redis.call('publish', ARGV[4] .. ':' .. head, 0)
    end
end

if redis.call('exists', KEYS[1]) == 0 then
    wake_the_head()
    return 0
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return count
end
redis.call('del', KEYS[1])
wake_the_head()
return 0
