-- Recognise a fenced grant whose reply was lost: if the lock holds my token,
-- re-arm its TTL and return the fencing token that grant got. That is the
-- counter's value now: every grant increments it in the same script, and no
-- other grant can have come since, for my token still holds the key.
-- KEYS[1] = lock key, KEYS[2] = fence counter key, ARGV[1] = my token,
-- ARGV[2] = ttl in ms. Returns the fencing token, or nil if the lock is not
-- mine (or its counter is gone, so the token cannot be known).
if redis.call('get', KEYS[1]) == ARGV[1] then
    local fence = redis.call('get', KEYS[2])
    if fence then
        redis.call('pexpire', KEYS[1], ARGV[2])
        return tonumber(fence)
    end
end
return nil
