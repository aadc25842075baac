//! `locklab sim-server`: one simulated Redis node, etcd member, ZooKeeper
//! server, PostgreSQL server or MariaDB server on a real TCP port, for
//! `redis-cli`, `etcdctl`, `zkCli.sh`, `psql`, `mariadb` or any client to
//! talk to.

use super::Outcome;
use crate::json::SimServerResult;
use sim::exit::ExitCode;

/// The services `sim-server` can speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Service {
    /// A Redis node (RESP, Lua): Redis 7.0.15 unless `--redis-version` says
    /// otherwise.
    Redis,
    /// An etcd member (the v3 gRPC API).
    Etcd,
    /// A ZooKeeper 3.8 server, standalone (its client protocol, jute).
    Zookeeper,
    /// A PostgreSQL 15 server (its wire protocol, simple queries; advisory
    /// locks, transactions, a lock table).
    Postgres,
    /// A MariaDB 10.11 server (the MySQL wire protocol, text queries;
    /// named locks, transactions, a lock table).
    Mysql,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Redis => "redis",
            Service::Etcd => "etcd",
            Service::Zookeeper => "zookeeper",
            Service::Postgres => "postgres",
            Service::Mysql => "mysql",
        }
    }

    /// The port served when none is given: beside, not on, the real
    /// server's usual port.
    fn default_port(self) -> u16 {
        match self {
            Service::Redis => 6390,
            Service::Etcd => 2399,
            Service::Zookeeper => 2191,
            Service::Postgres => 5442,
            // Not 3307, which a second local MySQL or MariaDB often takes.
            Service::Mysql => 3316,
        }
    }
}

/// Which etcd's Lock service an etcd member imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EtcdVersion {
    /// 3.4: a waiter whose lease expired while it waited is still told it
    /// holds the lock.
    #[value(name = "3.4")]
    V3_4,
    /// 3.5: the waiter re-reads its own key and gets "session expired".
    #[value(name = "3.5")]
    V3_5,
}

/// The arguments of `locklab sim-server`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The service to speak.
    #[arg(long, value_enum, default_value_t = Service::Redis)]
    pub service: Service,
    /// The port to listen on (default 6390 for redis, 2399 for etcd, 2191
    /// for zookeeper, 5442 for postgres, 3316 for mysql).
    #[arg(long)]
    pub port: Option<u16>,
    /// The address to bind (loopback unless you say otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// How long a script runs before other clients get `BUSY` (Redis's
    /// `busy-reply-threshold`, in ms; redis only).
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    pub busy_reply_threshold_ms: u64,
    /// Which server the Redis node is: redis-7.0, redis-8.4, valkey-8.1 or
    /// valkey-9.0 (it answers only the commands that server has; redis
    /// only).
    #[arg(long, default_value = "redis-7.0", value_name = "SERVER", value_parser = redis_version)]
    pub redis_version: simredis::ServerVersion,
    /// Which etcd's Lock service to imitate (etcd only).
    #[arg(long, value_enum, default_value_t = EtcdVersion::V3_4)]
    pub etcd_version: EtcdVersion,
    /// ZooKeeper's `tickTime`, ms: sessions expire on its ticks, and
    /// timeouts are clamped to 2 to 20 of them (zookeeper only).
    #[arg(long, default_value_t = 500, value_name = "MS")]
    pub tick_ms: u64,
    /// Print one JSON document on standard output once the server
    /// listens (its address, port and pid; docs/json.md); the human
    /// text goes to standard error.
    #[arg(long)]
    pub json: bool,
}

/// The server a `--redis-version` names.
fn redis_version(name: &str) -> Result<simredis::ServerVersion, String> {
    simredis::ServerVersion::named(name).ok_or_else(|| {
        let known: Vec<&str> = simredis::ServerVersion::ALL
            .iter()
            .map(|v| v.name())
            .collect();
        format!("no such server {name:?}; one of {}", known.join(", "))
    })
}

/// `locklab sim-server`: one simulated node, member or server on real TCP, until
/// Ctrl-C, SIGTERM or (Redis) a client's `SHUTDOWN`, even while a script
/// runs. Its document is printed once the server listens, so the outcome
/// carries no result.
pub fn execute(args: Args) -> Outcome<SimServerResult> {
    Outcome::failed(serve(&args))
}

/// Serves until stopped.
fn serve(args: &Args) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            crate::error!("cannot start a runtime: {e}");
            return ExitCode::BadInput;
        }
    };
    let asked =
        std::net::SocketAddr::new(args.bind, args.port.unwrap_or(args.service.default_port()));
    // Bound here, so that the address said is the one listened on (the
    // system picks the port of `--port 0`).
    let bound = std::net::TcpListener::bind(asked).and_then(|l| Ok((l.local_addr()?, l)));
    let (addr, listener) = match bound {
        Ok(bound) => bound,
        Err(e) => {
            crate::error!("cannot serve on {asked}: {e}");
            return ExitCode::BadInput;
        }
    };
    let port = addr.port();
    let (what, try_it, busy) = match args.service {
        Service::Redis => (
            format!("Redis node ({})", args.redis_version),
            format!("redis-cli -p {port} ping"),
            Some(args.busy_reply_threshold_ms),
        ),
        Service::Etcd => (
            format!(
                "etcd member (Lock service of etcd {})",
                args.etcd_version.label()
            ),
            format!("etcdctl --endpoints {addr} put greeting hello"),
            None,
        ),
        Service::Zookeeper => (
            format!("ZooKeeper 3.8 server (tick {} ms)", args.tick_ms),
            format!("zkCli.sh -server {addr}"),
            None,
        ),
        Service::Postgres => (
            "PostgreSQL 15 server (simple queries; trust)".to_string(),
            format!(
                "psql -h {} -p {port} -U postgres -c 'SELECT pg_try_advisory_lock(1)'",
                addr.ip()
            ),
            None,
        ),
        Service::Mysql => (
            "MariaDB 10.11 server (text queries; any user and password)".to_string(),
            format!(
                "mariadb -h {} -P {port} -u root -e 'SELECT GET_LOCK(\"a\", 0)'",
                addr.ip()
            ),
            None,
        ),
    };
    eprintln!("simulated {what} on {addr} (real time); try: {try_it}");
    if crate::json::active() {
        let ready = SimServerResult {
            service: args.service.name().into(),
            address: addr.to_string(),
            port,
            busy_reply_threshold_ms: busy,
            pid: std::process::id(),
        };
        crate::json::print(crate::json::CommandName::SimServer, None, Some(ready));
    }
    let served = match args.service {
        Service::Redis => {
            let mut config = simredis::NodeConfig::new("sim-server");
            // `INFO`'s `tcp_port` reports the port actually served.
            config.port = port;
            config.version = args.redis_version;
            config.busy_reply_threshold =
                std::time::Duration::from_millis(args.busy_reply_threshold_ms);
            // The signals are awaited on the server's socket thread: a
            // script that runs long blocks this one (the node's) inside Lua.
            runtime
                .block_on(simredis::serve_bound_until(listener, config, stop_signal()))
                .map_err(|e| e.to_string())
        }
        Service::Etcd => runtime.block_on(serve_etcd(listener, args.etcd_version.recheck())),
        Service::Zookeeper => runtime.block_on(serve_zookeeper(listener, args.tick_ms)),
        Service::Postgres => runtime.block_on(serve_postgres(listener)),
        Service::Mysql => runtime.block_on(serve_mysql(listener)),
    };
    match served {
        Ok(()) => ExitCode::Success,
        Err(e) => {
            crate::error!("cannot serve on {addr}: {e}");
            ExitCode::BadInput
        }
    }
}

impl EtcdVersion {
    fn label(self) -> &'static str {
        match self {
            EtcdVersion::V3_4 => "3.4",
            EtcdVersion::V3_5 => "3.5",
        }
    }

    fn recheck(self) -> simetcd::Recheck {
        match self {
            EtcdVersion::V3_4 => simetcd::Recheck::No,
            EtcdVersion::V3_5 => simetcd::Recheck::OwnKey,
        }
    }
}

/// Serves one etcd member until Ctrl-C or SIGTERM.
async fn serve_etcd(
    listener: std::net::TcpListener,
    recheck: simetcd::Recheck,
) -> Result<(), String> {
    let listener = tokio_listener(listener)?;
    let member = simetcd::Node::alone(simetcd::Member::default());
    tokio::select! {
        served = simetcd::serve_tcp(member, listener, recheck) => served.map_err(|e| e.to_string()),
        _ = stop_signal() => Ok(()),
    }
}

/// Serves one ZooKeeper server until Ctrl-C or SIGTERM; nodes' times are
/// the system's wall clock.
async fn serve_zookeeper(listener: std::net::TcpListener, tick_ms: u64) -> Result<(), String> {
    let listener = tokio_listener(listener)?;
    let mut config = simzk::Config::new(std::sync::Arc::new(system_wall_clock_ms));
    config.tick_ms = tick_ms.max(1);
    let server = simzk::Server::new(config);
    simzk::serve_tcp(server, listener, stop_signal())
        .await
        .map_err(|e| e.to_string())
}

/// Serves one PostgreSQL server until Ctrl-C or SIGTERM; `now()` is the
/// system's wall clock.
async fn serve_postgres(listener: std::net::TcpListener) -> Result<(), String> {
    let listener = tokio_listener(listener)?;
    let server = simpg::Server::new(simpg::Config::new(std::sync::Arc::new(
        system_wall_clock_ms,
    )));
    simpg::serve_tcp(server, listener, stop_signal())
        .await
        .map_err(|e| e.to_string())
}

/// Serves one MariaDB server until Ctrl-C or SIGTERM; `NOW()` is the
/// system's wall clock.
async fn serve_mysql(listener: std::net::TcpListener) -> Result<(), String> {
    let listener = tokio_listener(listener)?;
    let server = simmysql::Server::new(simmysql::Config::new(std::sync::Arc::new(
        system_wall_clock_ms,
    )));
    simmysql::serve_tcp(server, listener, stop_signal())
        .await
        .map_err(|e| e.to_string())
}

/// `listener` for tokio (the runtime is running).
fn tokio_listener(listener: std::net::TcpListener) -> Result<tokio::net::TcpListener, String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())
}

/// The system's wall clock in ms since the epoch: a server on a real port
/// runs in real time.
fn system_wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
