-- A reader's watchdog tick (Redisson's RedissonReadLock renewal before
-- the fix of Redisson pull request #7098): while my field is in the hash,
-- re-arm the hash and the timeout key of every hold of every reader, mine
-- or not.
-- KEYS[1] = lock key, KEYS[2] = every holder's timeout key prefix (`{lock}`),
-- ARGV[1] = lease in ms, ARGV[2] = my field.
-- Returns 1 if re-armed, 0 if I hold it no more.
if redis.call('hget', KEYS[1], ARGV[2]) == false then
    return 0
end
redis.call('pexpire', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) > 1 then
    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
        local count = tonumber(redis.call('hget', KEYS[1], field))
        if type(count) == 'number' then
            for n = count, 1, -1 do
                redis.call('pexpire', KEYS[2] .. ':' .. field .. ':rwlock_timeout:' .. n, ARGV[1])
            end
        end
    end
end
return 1
