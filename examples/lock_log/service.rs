//! The service of the `lock_log` example: clients that take its own
//! Redis lock, do the guarded work, and log every operation in the format
//! `locklab check` reads (see `main.rs` for the format).

use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The lock's key.
const LOCK_KEY: &str = "locklab:example:lock";
/// The counter the lock guards.
const COUNTER_KEY: &str = "locklab:example:counter";
/// How long a lease lasts.
const LEASE_TTL_MS: u64 = 2_000;
/// How long an acquire keeps trying before it gives up (`fail`).
const ACQUIRE_DEADLINE: Duration = Duration::from_secs(10);
/// The pause between two tries of a taken lock.
const RETRY_PAUSE: Duration = Duration::from_millis(2);
/// How long a request may go unanswered before it counts as `info`.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Deletes the lock key only if it still holds this lease's token.
const RELEASE_LUA: &str = r#"
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
"#;

/// Writes the counter only while the lock key holds this lease's token.
const GUARDED_WRITE_LUA: &str = r#"
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("SET", KEYS[2], ARGV[2])
  return 1
end
return 0
"#;

/// One line of the log.
#[derive(Serialize)]
struct Entry {
    process: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    f: &'static str,
    lock: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    value: Option<i64>,
    /// On an acquire's `ok`: how much longer the lease lasts in the
    /// client's own view, µs.
    #[serde(rename = "valid-for-us", skip_serializing_if = "Option::is_none")]
    valid_for_us: Option<u64>,
    time: u64,
    #[serde(rename = "clock-bound")]
    clock_bound: u64,
}

impl Entry {
    /// An entry of `process`, timed when it is recorded.
    fn new(process: u64, kind: &'static str, f: &'static str) -> Entry {
        Entry {
            process,
            kind,
            f,
            lock: LOCK_KEY,
            token: None,
            value: None,
            valid_for_us: None,
            time: 0,
            clock_bound: 0,
        }
    }

    fn token(mut self, token: Option<&str>) -> Entry {
        self.token = token.map(str::to_string);
        self
    }

    fn value(mut self, value: Option<i64>) -> Entry {
        self.value = value;
        self
    }
}

/// The log, shared by the clients: each entry is timed while the log is
/// held, so the file's order is the order of the times.
struct Log {
    start: Instant,
    entries: Mutex<Vec<Entry>>,
}

impl Log {
    /// Records `entry` now.
    fn record(&self, mut entry: Entry) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entry.time = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        entries.push(entry);
    }
}

/// How an operation ended.
enum Ended<T> {
    Ok(T),
    Fail,
    Info,
}

impl Ended<()> {
    /// How an owner-checked script ended: 1 did it, 0 found the lease
    /// gone, an error (a timeout, a lost connection) may have either.
    fn of_script(reply: redis::RedisResult<i64>) -> Ended<()> {
        match reply {
            Ok(1) => Ended::Ok(()),
            Ok(_) => Ended::Fail,
            Err(_) => Ended::Info,
        }
    }
}

impl<T> Ended<T> {
    fn kind(&self) -> &'static str {
        match self {
            Ended::Ok(_) => "ok",
            Ended::Fail => "fail",
            Ended::Info => "info",
        }
    }
}

/// One client: its number (which changes after an `info`) and connection.
struct Client {
    process: u64,
    clients: u64,
    conn: MultiplexedConnection,
    log: Arc<Log>,
}

impl Client {
    /// Records the invoke of `f`.
    fn invoke(&self, f: &'static str, token: Option<&str>, value: Option<i64>) {
        self.log.record(
            Entry::new(self.process, "invoke", f)
                .token(token)
                .value(value),
        );
    }

    /// Records the completion of an operation invoked earlier. After an
    /// `info` the outcome is unknown: the client goes on as a new process,
    /// so that the log never shows a process with two operations in flight.
    fn complete<T>(&mut self, ended: &Ended<T>, entry: Entry) {
        self.log.record(entry);
        if matches!(ended, Ended::Info) {
            self.process += self.clients;
        }
    }

    /// Takes the lock with `token`, retrying until the deadline.
    async fn acquire(&mut self, token: &str) -> Ended<()> {
        self.invoke("acquire", None, None);
        let invoked = Instant::now();
        let deadline = invoked + ACQUIRE_DEADLINE;
        let ended = loop {
            let reply: redis::RedisResult<Option<String>> = redis::cmd("SET")
                .arg(LOCK_KEY)
                .arg(token)
                .arg("NX")
                .arg("PX")
                .arg(LEASE_TTL_MS)
                .query_async(&mut self.conn)
                .await;
            match reply {
                Ok(Some(_)) => break Ended::Ok(()),
                Ok(None) if Instant::now() < deadline => tokio::time::sleep(RETRY_PAUSE).await,
                Ok(None) => break Ended::Fail,
                Err(_) => break Ended::Info,
            }
        };
        let mut entry = Entry::new(self.process, ended.kind(), "acquire");
        if !matches!(ended, Ended::Fail) {
            // The lease may be ours (surely, on `ok`): its token.
            entry = entry.token(Some(token));
        }
        if matches!(ended, Ended::Ok(())) {
            // The lease began on the server after the request left, so
            // counting its TTL from the invoke never overstates it.
            let ttl_us = LEASE_TTL_MS * 1_000;
            let spent_us = u64::try_from(invoked.elapsed().as_micros()).unwrap_or(u64::MAX);
            entry.valid_for_us = Some(ttl_us.saturating_sub(spent_us));
        }
        self.complete(&ended, entry);
        ended
    }

    /// Reads the counter (0 when it is not set).
    async fn read(&mut self, token: &str) -> Ended<i64> {
        self.invoke("read", Some(token), None);
        let reply: redis::RedisResult<Option<i64>> = self.conn.get(COUNTER_KEY).await;
        let ended = match reply {
            Ok(value) => Ended::Ok(value.unwrap_or(0)),
            Err(_) => Ended::Info,
        };
        let value = match ended {
            Ended::Ok(v) => Some(v),
            _ => None,
        };
        let entry = Entry::new(self.process, ended.kind(), "read")
            .token(Some(token))
            .value(value);
        self.complete(&ended, entry);
        ended
    }

    /// Writes `value` to the counter if the lease is still ours.
    async fn write(&mut self, token: &str, value: i64) -> Ended<()> {
        self.invoke("write", Some(token), Some(value));
        let reply: redis::RedisResult<i64> = redis::Script::new(GUARDED_WRITE_LUA)
            .key(LOCK_KEY)
            .key(COUNTER_KEY)
            .arg(token)
            .arg(value)
            .invoke_async(&mut self.conn)
            .await;
        let ended = Ended::of_script(reply);
        let entry = Entry::new(self.process, ended.kind(), "write")
            .token(Some(token))
            .value(Some(value));
        self.complete(&ended, entry);
        ended
    }

    /// Releases the lease if it is still ours.
    async fn release(&mut self, token: &str) -> Ended<()> {
        self.invoke("release", Some(token), None);
        let reply: redis::RedisResult<i64> = redis::Script::new(RELEASE_LUA)
            .key(LOCK_KEY)
            .arg(token)
            .invoke_async(&mut self.conn)
            .await;
        let ended = Ended::of_script(reply);
        let entry = Entry::new(self.process, ended.kind(), "release").token(Some(token));
        self.complete(&ended, entry);
        ended
    }

    /// `cycles` times: acquire, read, write counter + 1, release. Returns
    /// how many writes were accepted. After an `info` inside a cycle the
    /// client is a new process that never held this lease: it leaves the
    /// lease to expire rather than release what it does not hold.
    async fn run(mut self, cycles: u64, client: u64) -> u64 {
        let mut written = 0;
        for cycle in 1..=cycles {
            // The token names the client and the cycle: unique per lease.
            let token = format!("{client}-{cycle}");
            if !matches!(self.acquire(&token).await, Ended::Ok(())) {
                continue;
            }
            let Ended::Ok(counter) = self.read(&token).await else {
                continue;
            };
            match self.write(&token, counter + 1).await {
                Ended::Ok(()) => written += 1,
                Ended::Fail => {}
                Ended::Info => continue,
            }
            self.release(&token).await;
        }
        written
    }
}

/// Connects to `addr` (host:port) with the response timeout set.
async fn connect(addr: &str) -> redis::RedisResult<MultiplexedConnection> {
    let client = redis::Client::open(format!("redis://{addr}/"))?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    conn.set_response_timeout(RESPONSE_TIMEOUT);
    Ok(conn)
}

/// What to run.
pub struct Config {
    /// The Redis server, host:port.
    pub redis: String,
    /// Where to write the log (JSON lines).
    pub out: PathBuf,
    /// How many clients run at once.
    pub clients: u64,
    /// How many times each client takes the lock.
    pub cycles: u64,
}

/// What a run did.
pub struct Summary {
    /// Writes the store accepted.
    pub written: u64,
    /// The counter at the end.
    pub counter: i64,
    /// Lines in the log.
    pub lines: usize,
}

/// Runs the clients against a fresh lock and counter and writes the log.
pub async fn run(args: &Config) -> Result<Summary, Box<dyn std::error::Error + Send + Sync>> {
    let mut setup = connect(&args.redis).await?;
    // A fresh start: no lease left over from an earlier run, counter 0.
    let _: i64 = setup.del(&[LOCK_KEY, COUNTER_KEY]).await?;
    let log = Arc::new(Log {
        start: Instant::now(),
        entries: Mutex::new(Vec::new()),
    });
    let mut tasks = Vec::new();
    for client in 0..args.clients {
        let conn = connect(&args.redis).await?;
        let worker = Client {
            process: client,
            clients: args.clients,
            conn,
            log: Arc::clone(&log),
        };
        let cycles = args.cycles;
        tasks.push(tokio::spawn(worker.run(cycles, client)));
    }
    let mut written = 0;
    for task in tasks {
        written += task.await?;
    }
    let counter: Option<i64> = setup.get(COUNTER_KEY).await?;
    let entries = log.entries.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args.out)?);
    for entry in entries.iter() {
        serde_json::to_writer(&mut out, entry)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(Summary {
        written,
        counter: counter.unwrap_or(0),
        lines: entries.len(),
    })
}
