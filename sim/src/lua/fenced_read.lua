-- A fenced store's read: refuse a token lower than the highest seen, else
-- remember the token and return the stock.
-- KEYS[1] = stock, KEYS[2] = highest token seen, ARGV[1] = my token.
local seen = tonumber(redis.call('get', KEYS[2]) or '0')
local mine = tonumber(ARGV[1])
if mine < seen then
    return redis.error_reply('STALE token ' .. mine .. ' < ' .. seen)
end
redis.call('set', KEYS[2], mine)
return tonumber(redis.call('get', KEYS[1]) or '0')
