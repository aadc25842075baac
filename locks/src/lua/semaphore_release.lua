-- A permit-expirable semaphore's release of one permit (Redisson
-- RPermitExpirableSemaphore's tryRelease script, as it is since issue
-- #4086): take the permit id out of the timeout set and give the permit
-- back, telling the waiters.
-- KEYS[1] = the free permits, KEYS[2] = the semaphore's channel, KEYS[3] =
-- the timeout set.
-- ARGV[1] = the permit id, ARGV[2] = how many permits it stands for (1),
-- ARGV[3] = the caller's wall clock in ms, ARGV[4] = the publish command.
-- Returns 1 when the permit was mine and its lease had not ended; 0 when
-- it was gone (released, or given back by someone's sweep), and 0 too
-- when it was still there but its lease had ended by the caller's clock:
-- it is given back all the same, and the caller is told it was late.
local lease_end = redis.call('zscore', KEYS[3], ARGV[1])
if redis.call('zrem', KEYS[3], ARGV[1]) ~= 1 then
    return 0
end
local free = redis.call('incrby', KEYS[1], ARGV[2])
redis.call(ARGV[4], KEYS[2], free)
if tonumber(lease_end) <= tonumber(ARGV[3]) then
    return 0
end
return 1
