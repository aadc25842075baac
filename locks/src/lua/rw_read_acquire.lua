-- Read lock of a read-write lock (Redisson's RedissonReadLock acquire).
-- Readers share the hash in mode `read`, each with a hold count under its
-- owner field, and each hold has a timeout key of its own,
-- `{lock}:<field>:rwlock_timeout:<n>`, whose expiry is that hold's lease:
-- the hash lives as long as the longest of them.
-- KEYS[1] = lock key, KEYS[2] = my timeout key prefix
-- (`{lock}:<field>:rwlock_timeout`), ARGV[1] = lease in ms,
-- ARGV[2] = my field, ARGV[3] = my write field.
-- Returns {1, hold count} when I hold it now (a writer may also read its
-- own lock), {0, remaining ttl in ms} when another writer holds it.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, 1}
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':' .. count, 1, 'px', ARGV[1])
    local left = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(left, ARGV[1]))
    return {1, count}
end
return {0, redis.call('pttl', KEYS[1])}
