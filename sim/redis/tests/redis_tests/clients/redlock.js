// Drives node-redlock (5.0.0-beta.2, over ioredis) against one or more
// servers and prints what the client observed, one line per step: return
// values, errors and the votes of each attempt.
//
// Run by tests/real_clients.rs, once against redis-servers and once against
// simulated nodes, each behind a recording proxy: the printed lines and the
// recorded bytes must be the same. A lock's value is random; each is
// printed once on a line `value <hex>` so that the test can mask it in the
// bytes. Durations are never printed, only outcomes, because real time
// passes between the steps.
//
// Usage: node redlock.js PORT [PORT...]

"use strict";

const Redis = require("ioredis");
const { default: Redlock, ExecutionError } = require("redlock");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function line(step, what) {
  console.log(`${step}: ${what}`);
}

// A lock's value, printed once for the test to mask.
const seen = new Set();
function value(lock) {
  if (!seen.has(lock.value)) {
    seen.add(lock.value);
    console.log(`value ${lock.value}`);
  }
}

// The votes of each attempt, in order: for, against (with the reasons).
async function votes(attempts) {
  const out = [];
  for (const attempt of attempts) {
    const stats = await attempt;
    const against = [...stats.votesAgainst.values()].map((e) => e.message);
    out.push(`for ${stats.votesFor.size}, against ${stats.votesAgainst.size} ${JSON.stringify(against)}`);
  }
  return `${attempts.length} attempt(s): ${out.join("; ")}`;
}

// Whether a key's TTL lies in (low, high] ms, asked of the server in one
// script, so that the bytes carry the answer and not the exact TTL, which
// depends on timing.
const TTL_WITHIN = `
local ttl = redis.call('pttl', KEYS[1])
return ttl > tonumber(ARGV[1]) and ttl <= tonumber(ARGV[2])
`;
const ttlWithin = async (client, key, low, high) =>
  (await client.eval(TTL_WITHIN, 1, key, low, high)) === 1;

async function step(name, fn) {
  try {
    const result = await fn();
    line(name, result);
    return result;
  } catch (error) {
    if (error instanceof ExecutionError) {
      line(name, `ExecutionError: ${error.message} ${await votes(error.attempts)}`);
    } else {
      line(name, `${error.name}: ${error.message}`);
    }
    return undefined;
  }
}

async function main() {
  const ports = process.argv.slice(2).map(Number);
  // No ready check: it sends INFO, whose text is each server's own (the
  // node's memory figures are estimates; the conformance suite masks INFO).
  const clients = ports.map(
    (port) =>
      new Redis({ host: "127.0.0.1", port, enableReadyCheck: false, maxRetriesPerRequest: 0 }),
  );
  const redlock = new Redlock(clients, {
    driftFactor: 0.01,
    retryCount: 2,
    retryDelay: 50,
    retryJitter: 20,
  });
  line("instances", clients.length);
  // Each server answers the same way; one line per server would repeat it.
  const everywhere = async (fn) => JSON.stringify(await Promise.all(clients.map(fn)));

  let lock;
  await step("acquire for 500 ms", async () => {
    lock = await redlock.acquire(["lock:js"], 500);
    value(lock);
    return `ok, ${await votes(lock.attempts)}`;
  });
  await step("stored value is the lock's", () =>
    everywhere(async (c) => (await c.get("lock:js")) === lock.value),
  );
  await step("ttl above 0, at most 500 ms", () =>
    everywhere((c) => ttlWithin(c, "lock:js", 0, 500)),
  );
  await step("contended acquire", async () => {
    await redlock.acquire(["lock:js"], 500);
    return "acquired (unexpected)";
  });
  // A failed acquire releases its value everywhere, but returns once a
  // quorum has answered: the last server's release (NOSCRIPT, then EVAL)
  // may still be on its way, and would race the next step's GET on that
  // connection. Its stats are not returned, so it is given time instead.
  await sleep(100);
  await step("still held by the first", () =>
    everywhere(async (c) => (await c.get("lock:js")) === lock.value),
  );
  await step("extend to 800 ms", async () => {
    lock = await lock.extend(800);
    value(lock);
    return `ok, ${await votes(lock.attempts)}`;
  });
  await step("ttl above 500 ms, at most 800 ms", () =>
    everywhere((c) => ttlWithin(c, "lock:js", 500, 800)),
  );
  await step("release", async () => `ok, ${await votes((await lock.release()).attempts)}`);
  await step("key gone after release", () => everywhere((c) => c.exists("lock:js")));
  await step("release again", async () => `ok, ${await votes((await lock.release()).attempts)}`);

  // `using` with a 400 ms lock extended automatically 300 ms before it
  // expires (a stall shorter than that keeps it), around a 700 ms
  // routine: the lock must outlive the routine.
  // How many extensions run depends on timing; the test collapses repeats.
  await step("using, a routine longer than the lock", () =>
    redlock.using(["lock:js:using"], 400, { automaticExtensionThreshold: 300 }, async (signal) => {
      await sleep(700);
      const held = await everywhere((c) => ttlWithin(c, "lock:js:using", 0, 400));
      return `aborted ${signal.aborted}, still held ${held}`;
    }),
  );
  await step("key gone after using", () => everywhere((c) => c.exists("lock:js:using")));

  // A lock that expired: extending fails in the client, releasing fails
  // on the servers (the value is gone) after the retries.
  let short;
  await step("acquire for 200 ms", async () => {
    short = await redlock.acquire(["lock:js:short"], 200);
    value(short);
    return "ok";
  });
  await sleep(300);
  await step("extend an expired lock", async () => {
    await short.extend(500);
    return "extended (unexpected)";
  });
  await step("release an expired lock", async () => `ok, ${await votes((await short.release()).attempts)}`);

  await redlock.quit();
}

main().catch((error) => {
  console.log(`unexpected: ${error.stack}`);
  process.exit(1);
});
