-- A permit-expirable semaphore's try (Redisson RPermitExpirableSemaphore's
-- tryAcquire script): give back the permits whose lease ran out, then take
-- the ones asked for if enough are free.
-- KEYS[1] = the free permits (a counter), KEYS[2] = the timeout set
-- (permit id -> the wall-clock ms at which its lease ends), KEYS[3] = the
-- semaphore's channel.
-- ARGV[1] = how many permits, ARGV[2] = the new permits' lease end (the
-- caller's wall clock + lease time), ARGV[3] = the caller's wall clock in
-- ms (Redisson sends System.currentTimeMillis(): whose permit has run out
-- is decided by the clock of whoever asks), ARGV[4] = the score of a
-- permit that never expires, ARGV[5] = the publish command, ARGV[6..] =
-- the new permit ids.
-- Returns 'OK' when the permits are mine; ':' and the earliest lease end
-- when they are not and some lease will end; nil when none ever will.
local wanted = tonumber(ARGV[1])

-- Leases that ended by the caller's clock, at most as many as it wants,
-- go back to the free count; waiters hear of them.
local ended = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, wanted)
if #ended > 0 then
    redis.call('zrem', KEYS[2], unpack(ended))
    local free = redis.call('incrby', KEYS[1], #ended)
    if tonumber(free) > 0 then
        redis.call(ARGV[5], KEYS[3], free)
    end
end

local free = redis.call('get', KEYS[1])
if free ~= false and tonumber(free) >= wanted then
    redis.call('decrby', KEYS[1], wanted)
    for i = 6, #ARGV do
        redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
    end
    -- A semaphore given a TTL of its own passes it to its timeout set.
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return 'OK'
end

-- Taken: tell the caller when the first lease may end, unless it never will.
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] ~= nil and first[2] ~= ARGV[4] then
    return ':' .. tostring(first[2])
end
return nil
