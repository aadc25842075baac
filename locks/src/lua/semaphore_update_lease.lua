-- A permit-expirable semaphore's updateLeaseTime (Redisson
-- RPermitExpirableSemaphore): sweep every lease that ended by the
-- caller's clock, then give my permit, if it is still there, a new lease
-- end.
-- KEYS[1] = the free permits, KEYS[2] = the timeout set, KEYS[3] = the
-- semaphore's channel.
-- ARGV[1] = the permit id, ARGV[2] = its new lease end (the caller's wall
-- clock + lease time), ARGV[3] = the caller's wall clock in ms, ARGV[4] =
-- the publish command.
-- Returns 1 when the lease was moved, 0 when the permit was gone (its own
-- lease among those just swept).
local ended = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3])
if #ended > 0 then
    redis.call('zrem', KEYS[2], unpack(ended))
    local free = redis.call('incrby', KEYS[1], #ended)
    if tonumber(free) > 0 then
        redis.call(ARGV[4], KEYS[3], free)
    end
end
if redis.call('zscore', KEYS[2], ARGV[1]) ~= false then
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[1])
    return 1
end
return 0
