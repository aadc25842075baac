-- A fair lock's acquire: a reentrant hash lock with a line of waiters
-- beside it (Redisson 3.5x RedissonFairLock's waiting acquire).
-- KEYS[1] = lock hash, KEYS[2] = wait queue (a list of owner fields, in
-- arrival order), KEYS[3] = timeout set (owner field -> wall-clock ms
-- after which a waiter that has not come back counts as gone).
-- ARGV[1] = lease ttl in ms, ARGV[2] = my owner field, ARGV[3] = how long
-- a waiter may take for its turn in ms, ARGV[4] = the caller's wall clock
-- in ms (Redisson sends System.currentTimeMillis(): the queue trusts the
-- clocks of every client).
-- Returns {1, hold count} when I hold the lock (Redisson answers nil; the
-- count tells the lease its depth), {0, ms until my turn may come} when I
-- wait in the line.
local now = tonumber(ARGV[4])
local step = tonumber(ARGV[3])

-- Waiters whose time ran out leave the line, from its head only, so one
-- that is still in time stops the sweep; nobody else's time is moved.
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

-- A free lock goes to the head of the line, or to anyone when nobody waits.
if redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[2], 0)
    if not head or head == ARGV[2] then
        redis.call('lpop', KEYS[2])
        redis.call('zrem', KEYS[3], ARGV[2])
        -- Everyone left moves up one place: one step less to wait.
        local waiting = redis.call('zrange', KEYS[3], 0, -1)
        for _, waiter in ipairs(waiting) do
            redis.call('zincrby', KEYS[3], -step, waiter)
        end
        redis.call('hset', KEYS[1], ARGV[2], 1)
        redis.call('pexpire', KEYS[1], ARGV[1])
        return {1, 1}
    end
end

-- My own lock: one hold more.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, count}
end

-- Already in the line: how long the lock has left.
if redis.call('zscore', KEYS[3], ARGV[2]) then
    return {0, math.max(0, redis.call('pttl', KEYS[1]))}
end

-- Join the line at its end: my time runs one step after the waiter
-- before me (or after the lock's remaining TTL when I am first).
local last = redis.call('lindex', KEYS[2], -1)
local last_deadline = false
if last and last ~= ARGV[2] then
    last_deadline = redis.call('zscore', KEYS[3], last)
end
local ahead
if last_deadline then
    ahead = tonumber(last_deadline) - now
else
    ahead = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ahead + step + now, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return {0, ahead}
