-- A permit-expirable semaphore's trySetPermits (Redisson
-- RPermitExpirableSemaphore, as it is since issue #4678): set the number
-- of permits only on a semaphore that has none yet.
-- KEYS[1] = the free permits, KEYS[2] = the semaphore's channel.
-- ARGV[1] = the number of permits, ARGV[2] = the publish command.
-- Returns 1 when it set them, 0 when the counter was already there (even
-- at 0: its permits are all taken, not missing).
if redis.call('get', KEYS[1]) ~= false then
    return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
