"""Drives redis-py's `redis.lock.Lock` against one server and prints what
the client observed, one line per step: return values and exceptions.

Run by tests/real_clients.rs, once against redis-server and once against
the simulated node, each behind a recording proxy: the printed lines and
the recorded bytes must be the same. Tokens are fixed (`token=`) so that
the bytes do not change from run to run; durations are never printed,
only whether a TTL lies in the range the step implies, because real time
passes between the steps.

Usage: redis_py_lock.py PORT [PROTOCOL]  (redis-py's default, 3, if absent)
"""

import sys
import threading
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError


# Whether a key's TTL lies in (low, high] ms, asked of the server in one
# script, so that the bytes carry the answer and not the exact TTL, which
# depends on timing.
TTL_WITHIN = """
local ttl = redis.call('pttl', KEYS[1])
return ttl > tonumber(ARGV[1]) and ttl <= tonumber(ARGV[2])
"""


def ttl_within(client, key, low, high):
    """Whether the TTL of `key` lies in (low, high] ms."""
    return client.eval(TTL_WITHIN, 1, key, low, high) == 1


def show(step, fn):
    """Prints the step and what it returned or raised."""
    try:
        result = fn()
    except LockNotOwnedError as e:
        result = f"LockNotOwnedError: {e}"
    except LockError as e:
        result = f"LockError: {e}"
    except redis.RedisError as e:
        result = f"{type(e).__name__}: {e}"
    print(f"{step}: {result!r}", flush=True)
    return result


def main():
    port = int(sys.argv[1])
    options = {"protocol": int(sys.argv[2])} if len(sys.argv) > 2 else {}
    print(f"redis-py {redis.__version__} {options}", flush=True)
    # Two clients, each with its own connection: the holder and a rival.
    a = redis.Redis(host="127.0.0.1", port=port, **options)
    b = redis.Redis(host="127.0.0.1", port=port, **options)
    show("holder ping", a.ping)
    show("rival ping", b.ping)

    # The holder's token is not thread-local: a timer thread releases it.
    held = a.lock("lock:py", timeout=0.5, sleep=0.05, thread_local=False)
    rival = b.lock("lock:py", timeout=0.5, sleep=0.05)

    show("acquire", lambda: held.acquire(blocking=False, token="token-a"))
    show("owned", held.owned)
    show("locked", held.locked)
    show("stored token", lambda: b.get("lock:py"))
    show("rival owned", rival.owned)
    show("rival locked", rival.locked)
    show("rival acquire, non-blocking", lambda: rival.acquire(blocking=False, token="token-b"))
    show("extend by 0.5 s", lambda: held.extend(0.5))
    show("ttl above 0.5 s, at most 1 s", lambda: ttl_within(b, "lock:py", 500, 1000))
    show("extend to 0.2 s (replace_ttl)", lambda: held.extend(0.2, replace_ttl=True))
    show("ttl at most 0.2 s", lambda: ttl_within(b, "lock:py", 0, 200))
    show("reacquire", held.reacquire)
    show("ttl above 0.2 s, at most 0.5 s", lambda: ttl_within(b, "lock:py", 200, 500))
    show("release", held.release)
    show("locked after release", held.locked)
    show("owned after release", held.owned)

    # A blocking acquire that succeeds once the holder releases: the rival
    # polls (how many times depends on timing; the test collapses repeats).
    show("acquire again", lambda: held.acquire(blocking=False, token="token-a"))
    timer = threading.Timer(0.4, held.release)
    timer.start()
    show("rival acquire, blocking up to 2 s", lambda: rival.acquire(blocking_timeout=2, token="token-b"))
    timer.join()
    show("rival owned", rival.owned)
    show("holder owned", held.owned)
    show("rival release", rival.release)

    # A blocking acquire that times out while the lock stays held.
    show("acquire again", lambda: held.acquire(blocking=False, token="token-a"))
    show("rival acquire, blocking up to 0.2 s", lambda: rival.acquire(blocking_timeout=0.2, token="token-b"))
    show("owned", held.owned)
    show("release", held.release)

    # A lock that expires (0.2 s) is taken by the blocking rival; the
    # holder's release then finds it owned by another.
    short = a.lock("lock:py", timeout=0.2, sleep=0.05)
    show("acquire for 0.2 s", lambda: short.acquire(blocking=False, token="token-a"))
    show("rival acquire, blocking up to 2 s", lambda: rival.acquire(blocking_timeout=2, token="token-b"))
    show("holder owned after expiry", short.owned)
    show("holder release after expiry", short.release)
    show("rival release", rival.release)

    # Error paths: the key deleted under the holder, then each operation.
    show("acquire again", lambda: held.acquire(blocking=False, token="token-a"))
    show("delete the key", lambda: b.delete("lock:py"))
    show("extend a lock not held", lambda: held.extend(1))
    show("reacquire a lock not held", held.reacquire)
    show("release a lock not held", held.release)
    show("release an unlocked lock", held.release)
    no_ttl = a.lock("lock:py:no-ttl")
    show("acquire without a timeout", lambda: no_ttl.acquire(blocking=False, token="token-c"))
    show("ttl of a lock without a timeout", lambda: b.pttl("lock:py:no-ttl"))
    show("extend a lock without a timeout", lambda: no_ttl.extend(1))
    show("release", no_ttl.release)
    a.close()
    b.close()


if __name__ == "__main__":
    main()
