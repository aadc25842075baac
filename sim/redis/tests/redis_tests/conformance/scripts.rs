// Lock scripts exercised by the conformance suite, unchanged from where they
// come from (each cites its source). Included by tests/conformance.rs.

/// Redisson-style reentrant lock, version 1 (sources/002, "加锁命令 Version 1").
pub const REDISSON_LOCK_V1: &str = "if redis.call('EXISTS',KEYS[1]) == 0 then
  redis.call('HSET',KEYS[1],ARGV[1],1)
  redis.call('EXPIRE',KEYS[1],ARGV[2])
  return 1
elseif redis.call('HEXISTS',KEYS[1],ARGV[1]) == 1 then
  redis.call('HINCRBY',KEYS[1],ARGV[1],1)
  redis.call('EXPIRE',KEYS[1],ARGV[2])
  return 1
else
  return 0
end";

/// Redisson-style reentrant lock, version 2 (sources/002, one-line EVAL form).
pub const REDISSON_LOCK_V2: &str = "if redis.call('EXISTS',KEYS[1]) == 0 or redis.call('HEXISTS',KEYS[1],ARGV[1]) == 1 then redis.call('HINCRBY',KEYS[1],ARGV[1],1) redis.call('EXPIRE',KEYS[1],ARGV[2]) return 1 else return 0 end";

/// Redisson-style unlock (sources/002, one-line EVAL form).
pub const REDISSON_UNLOCK: &str = "if redis.call('HEXISTS',KEYS[1],ARGV[1]) == 0 then return nil elseif redis.call('HINCRBY',KEYS[1],ARGV[1],-1) == 0 then return redis.call('del',KEYS[1]) else  return 0 end";

/// Redisson-style renewal (sources/002, "改进版本七：自动续期").
pub const REDISSON_RENEW: &str = "if redis.call('HEXISTS',KEYS[1],ARGV[1]) == 1 then
  return redis.call('expire',KEYS[1],ARGV[2])
else
  return 0
end";

/// Redisson's tryLockInnerAsync as quoted in sources/002 (PEXPIRE + PTTL).
pub const REDISSON_TRYLOCK: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";

/// rslock's UNLOCK_SCRIPT (github.com/hexcowboy/rslock, src/lock.rs).
pub const RSLOCK_UNLOCK: &str = r#"
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
else
  return 0
end
"#;

/// rslock's EXTEND_SCRIPT (github.com/hexcowboy/rslock, src/lock.rs).
pub const RSLOCK_EXTEND: &str = r#"
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return 0
else
  if redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2]) ~= nil then
    return 1
  else
    return 0
  end
end
"#;

/// redsync's deleteScript (github.com/go-redsync/redsync, mutex.go, v4).
pub const REDSYNC_DELETE: &str = r#"
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
"#;

/// redsync's touchScript (github.com/go-redsync/redsync, mutex.go, v4).
pub const REDSYNC_TOUCH: &str = r#"
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
"#;

/// redsync's older touchScript (github.com/go-redsync/redsync, mutex.go, v1-v2).
pub const REDSYNC_TOUCH_OLD: &str = r#"
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("SET", KEYS[1], ARGV[1], "XX", "PX", ARGV[2])
	else
		return "ERR"
	end
"#;

/// node-redlock's ACQUIRE_SCRIPT (github.com/mike-marcacci/node-redlock, src/index.ts).
pub const REDLOCK_ACQUIRE: &str = r#"
  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries added.
  return #KEYS
"#;

/// node-redlock's EXTEND_SCRIPT (github.com/mike-marcacci/node-redlock, src/index.ts).
pub const REDLOCK_EXTEND: &str = r#"
  -- Return 0 if an entry exists with a *different* lock value.
  for i, key in ipairs(KEYS) do
    if redis.call("get", key) ~= ARGV[1] then
      return 0
    end
  end

  -- Update the entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries updated.
  return #KEYS
"#;

/// node-redlock's RELEASE_SCRIPT (github.com/mike-marcacci/node-redlock, src/index.ts).
pub const REDLOCK_RELEASE: &str = r#"
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
"#;

/// cmsgpack: a nested table with every kind of value survives a pack and
/// an unpack, and the bytes of its pack are returned to compare.
pub const CMSGPACK_ROUND_TRIP: &str = r#"
local t = {1, -1, 300, -300, 70000, 2^40, -2^40, 0.5, 0.1, 'short',
  string.rep('m', 40), string.rep('l', 300), true, false,
  {nested = {deeper = {1, 2, 3}}, list = {'a', 'b'}}, {}}
local packed = cmsgpack.pack(t)
local back = cmsgpack.unpack(packed)
local out = {}
for i = 1, #back do
  local v = back[i]
  if type(v) == 'table' then
    out[#out + 1] = cmsgpack.pack(v)
  else
    out[#out + 1] = tostring(v)
  end
end
out[#out + 1] = packed
out[#out + 1] = back[15].nested.deeper[3]
return out
"#;

/// cmsgpack: several values packed together, read back one at a time
/// with `unpack_one` and two at a time with `unpack_limit`.
pub const CMSGPACK_STREAM: &str = r#"
local s = cmsgpack.pack('a', {1, 2}, 3, {k = 'v'}, 'e')
local out, offset = {}, 0
while offset ~= -1 do
  local value
  offset, value = cmsgpack.unpack_one(s, offset)
  out[#out + 1] = offset
  out[#out + 1] = type(value)
end
local o, x, y = cmsgpack.unpack_limit(s, 2, 0)
out[#out + 1] = o
out[#out + 1] = x
out[#out + 1] = y[2]
o, x, y = cmsgpack.unpack_limit(s, 2, o)
out[#out + 1] = o
out[#out + 1] = x
out[#out + 1] = y.k
return out
"#;

/// struct: a record with every option, aligned and in both byte orders,
/// packed, sized and unpacked again.
pub const STRUCT_ROUND_TRIP: &str = r#"
local out = {}
for _, order in ipairs({'<', '>'}) do
  local fmt = order .. '!4 b B h H l L T i I i3 I5 f d c3 s x'
  local packed = struct.pack(fmt, -1, 200, -300, 60000, -5, 6, 7, -8, 9,
    -70000, 2^33, 1.5, -2.25, 'abc', 'zero')
  out[#out + 1] = packed
  local values = {struct.unpack(fmt, packed)}
  for i = 1, #values do out[#out + 1] = tostring(values[i]) end
end
out[#out + 1] = struct.size('<!4 b B h H l L T i I i3 I5 f d c3')
return out
"#;

/// Every script by the name the cases use (`$name`, `$sha:name`).
pub fn all() -> Vec<(&'static str, &'static str)> {
    vec![
        ("redisson_lock_v1", REDISSON_LOCK_V1),
        ("cmsgpack_round_trip", CMSGPACK_ROUND_TRIP),
        ("cmsgpack_stream", CMSGPACK_STREAM),
        ("struct_round_trip", STRUCT_ROUND_TRIP),
        ("redisson_lock_v2", REDISSON_LOCK_V2),
        ("redisson_unlock", REDISSON_UNLOCK),
        ("redisson_renew", REDISSON_RENEW),
        ("redisson_trylock", REDISSON_TRYLOCK),
        ("rslock_unlock", RSLOCK_UNLOCK),
        ("rslock_extend", RSLOCK_EXTEND),
        ("redsync_delete", REDSYNC_DELETE),
        ("redsync_touch", REDSYNC_TOUCH),
        ("redsync_touch_old", REDSYNC_TOUCH_OLD),
        ("redlock_acquire", REDLOCK_ACQUIRE),
        ("redlock_extend", REDLOCK_EXTEND),
        ("redlock_release", REDLOCK_RELEASE),
        // The ladder's own scripts (locks/src/lua), the one copy used everywhere.
        (
            "ladder_release",
            include_str!("../../../../../locks/src/lua/release.lua"),
        ),
        (
            "ladder_extend",
            include_str!("../../../../../locks/src/lua/extend.lua"),
        ),
        (
            "ladder_fenced_acquire",
            include_str!("../../../../../locks/src/lua/fenced_acquire.lua"),
        ),
        (
            "ladder_reentrant_acquire",
            include_str!("../../../../../locks/src/lua/reentrant_acquire.lua"),
        ),
        (
            "ladder_reentrant_release",
            include_str!("../../../../../locks/src/lua/reentrant_release.lua"),
        ),
        (
            "ladder_reentrant_renew",
            include_str!("../../../../../locks/src/lua/reentrant_renew.lua"),
        ),
        // The `redisson-fair` library rung's scripts.
        (
            "fair_acquire",
            include_str!("../../../../../locks/src/lua/fair_acquire.lua"),
        ),
        (
            "fair_give_up",
            include_str!("../../../../../locks/src/lua/fair_give_up.lua"),
        ),
        (
            "fair_release",
            include_str!("../../../../../locks/src/lua/fair_release.lua"),
        ),
        // The `redisson-semaphore` library rung's scripts.
        (
            "semaphore_acquire",
            include_str!("../../../../../locks/src/lua/semaphore_acquire.lua"),
        ),
        (
            "semaphore_release",
            include_str!("../../../../../locks/src/lua/semaphore_release.lua"),
        ),
        (
            "semaphore_update_lease",
            include_str!("../../../../../locks/src/lua/semaphore_update_lease.lua"),
        ),
        (
            "semaphore_set_permits",
            include_str!("../../../../../locks/src/lua/semaphore_set_permits.lua"),
        ),
    ]
}
