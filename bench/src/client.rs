//! The compared implementations behind one interface: the floor, rslock,
//! and any rung of the ladder with a chosen wait strategy.

use futures::future::join_all;
use locks::{
    ConnConfig, Lease, Lock, LockConfig, LockContext, Owner, ReconnectingConnection,
    ReleaseNotifier, SystemClock, TcpDialer, WaitStrategy, Wakeups,
};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisConnectionInfo};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The client's runtime: one thread runs every task, connection driver
/// and timer, so the client occupies exactly the CPU it is pinned to.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// One Redis node to talk to.
#[derive(Debug, Clone)]
pub struct Node {
    /// `host:port`.
    pub addr: String,
    /// `redis://host:port/` (for rslock, which dials by URL).
    pub url: String,
}

impl Node {
    /// A node from a `redis://host:port[/]` URL (no password, db 0). The
    /// error names the URL and the form expected.
    pub fn from_url(url: &str) -> anyhow::Result<Node> {
        let expected = "expected redis://host:port (no password, no db)";
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| anyhow::anyhow!("{url:?}: {expected}"))?;
        let addr = rest.strip_suffix('/').unwrap_or(rest);
        let Some((host, port)) = addr.rsplit_once(':') else {
            anyhow::bail!("{url:?}: no port; {expected}");
        };
        anyhow::ensure!(
            !host.is_empty() && !addr.contains('@') && !addr.contains('/'),
            "{url:?}: {expected}"
        );
        // Checked here, not at the first connection minutes later.
        anyhow::ensure!(
            port.parse::<u16>().is_ok_and(|p| p > 0),
            "{url:?}: port {port:?} is not a number from 1 to 65535; {expected}"
        );
        Ok(Node {
            addr: addr.to_string(),
            url: format!("redis://{addr}/"),
        })
    }

    /// The node of a server the harness started.
    pub fn of(server: &harness::RedisServer) -> Node {
        Node {
            addr: server.addr().to_string(),
            url: server.url(),
        }
    }

    /// The client address of an etcd member the harness started, for the
    /// etcd rungs ([`Impl::Etcd`]); its `url` is the member's HTTP one.
    pub fn etcd(member: &harness::etcd::EtcdServer) -> Node {
        let addr = member.addr().to_string();
        Node {
            url: format!("http://{addr}"),
            addr,
        }
    }

    /// The client address of a ZooKeeper server the harness started, for
    /// the ZooKeeper rungs ([`Impl::ZooKeeper`]); its `url` names the
    /// server as ZooKeeper's connect strings do.
    pub fn zookeeper(server: &harness::zookeeper::ZkServer) -> Node {
        let addr = server.addr().to_string();
        Node {
            url: format!("zk://{addr}"),
            addr,
        }
    }

    /// The address of a PostgreSQL server the harness started, for the
    /// PostgreSQL rungs ([`Impl::Postgres`]); its `url` is the server's
    /// connection URI.
    pub fn postgres(server: &harness::postgres::PgServer) -> Node {
        let addr = server.addr().to_string();
        Node {
            url: format!("postgresql://{addr}"),
            addr,
        }
    }

    /// The address of a MariaDB server the harness started, for
    /// `mysql-get-lock` ([`Impl::MySql`]); its `url` names the server as
    /// MySQL's connection URIs do.
    pub fn mariadb(server: &harness::mariadb::MariaDbServer) -> Node {
        let addr = server.addr().to_string();
        Node {
            url: format!("mysql://{addr}"),
            addr,
        }
    }

    /// Connects and sends `PING`, all within [`ANSWER_WITHIN`]: a server
    /// given by URL that is down, or that accepts but never answers, stops
    /// the run at its start with an error naming the URL, instead of
    /// hanging it.
    pub async fn check_answers(&self) -> anyhow::Result<()> {
        let ping = async {
            let mut c = raw_connection(&self.addr).await?;
            let _: String = redis::cmd("PING").query_async(&mut c).await?;
            anyhow::Ok(())
        };
        match tokio::time::timeout(ANSWER_WITHIN, ping).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(anyhow::anyhow!(
                "{}: no Redis server answering: {e:#}",
                self.url
            )),
            Err(_) => Err(anyhow::anyhow!(
                "{}: no answer to PING within {} s; expected a Redis server there",
                self.url,
                ANSWER_WITHIN.as_secs()
            )),
        }
    }
}

/// How long a server may take to accept a connection and answer: far
/// beyond any working server's, short enough that a dead one is reported
/// at once rather than after the operating system gives up (minutes).
pub const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// How a rung waits, as the bench names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// The rung's default: fixed 50 ms polling ([`LockConfig::default`]).
    Fixed,
    /// Exponential backoff with jitter, 250 µs up to 16 ms.
    Backoff,
    /// Pub/sub wake-up on release, 50 ms fallback.
    Notify,
}

impl Wait {
    /// The label in reports.
    pub fn label(self) -> &'static str {
        match self {
            Wait::Fixed => "fixed",
            Wait::Backoff => "backoff",
            Wait::Notify => "notify",
        }
    }

    fn strategy(self) -> WaitStrategy {
        match self {
            Wait::Fixed => LockConfig::default().wait,
            Wait::Backoff => WaitStrategy::Backoff {
                initial: Duration::from_micros(250),
                max: Duration::from_millis(16),
            },
            Wait::Notify => WaitStrategy::Notify {
                fallback: Duration::from_millis(50),
            },
        }
    }
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Impl {
    /// The hand-written minimal cycle; retries every 1 ms when taken.
    Floor,
    /// The `rslock` crate with its defaults.
    Rslock,
    /// A rung of the ladder with a wait strategy.
    Rung(&'static str, Wait),
    /// An etcd rung (`service: "etcd"`), on an etcd member: it waits as
    /// the rung does (a watch, or the member's Lock RPC), never by a
    /// [`Wait`].
    Etcd(&'static str),
    /// A ZooKeeper rung (`service: "zookeeper"`), on a ZooKeeper server:
    /// it waits on its watches, never by a [`Wait`].
    ZooKeeper(&'static str),
    /// A PostgreSQL rung (`service: "postgres"`), on a PostgreSQL server,
    /// with one session of its own: it polls as the rung's default does
    /// ([`Wait::Fixed`]), since a database has nothing to wake it.
    Postgres(&'static str),
    /// `mysql-get-lock` (`service: "mysql"`), on a MariaDB server, with
    /// one session of its own; it polls as [`Impl::Postgres`] does.
    MySql(&'static str),
}

/// A service other than Redis whose rungs are measured beside it, each
/// on a real server the run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// etcd: one member.
    Etcd,
    /// ZooKeeper: one standalone server.
    ZooKeeper,
    /// PostgreSQL: one server, `fsync` on.
    Postgres,
    /// MySQL, as MariaDB: one server, each commit flushed to its redo log.
    MySql,
}

impl Service {
    /// Every service measured beside Redis, in the report's order.
    pub const ALL: [Service; 4] = [
        Service::Etcd,
        Service::ZooKeeper,
        Service::Postgres,
        Service::MySql,
    ];

    /// The [`Rung::service`](locks::Rung::service) of its rungs.
    pub fn id(self) -> &'static str {
        match self {
            Service::Etcd => ETCD_SERVICE,
            Service::ZooKeeper => ZOOKEEPER_SERVICE,
            Service::Postgres => locks::database::rungs::SERVICE,
            Service::MySql => locks::database::rungs::MYSQL_SERVICE,
        }
    }

    /// Its name in reports: the server's, for the databases (MariaDB
    /// stands for MySQL here).
    pub fn name(self) -> &'static str {
        match self {
            Service::Etcd => "etcd",
            Service::ZooKeeper => "ZooKeeper",
            Service::Postgres => "PostgreSQL",
            Service::MySql => "MariaDB",
        }
    }

    /// Its rung `id` as an implementation.
    pub fn rung(self, id: &'static str) -> Impl {
        match self {
            Service::Etcd => Impl::Etcd(id),
            Service::ZooKeeper => Impl::ZooKeeper(id),
            Service::Postgres => Impl::Postgres(id),
            Service::MySql => Impl::MySql(id),
        }
    }
}

/// The [`Rung::service`](locks::Rung::service) of the etcd rungs.
const ETCD_SERVICE: &str = "etcd";

/// The [`Rung::service`](locks::Rung::service) of the ZooKeeper rungs.
const ZOOKEEPER_SERVICE: &str = "zookeeper";

/// The report's name of the `rslock` library rung (the model of the
/// rslock crate), apart from the crate's own row, `rslock`.
pub const RSLOCK_MODEL: &str = "rslock-model";

impl Impl {
    /// `floor`, `rslock` (the crate) or the rung id; the `rslock` rung is
    /// [`RSLOCK_MODEL`].
    pub fn name(&self) -> &'static str {
        match self {
            Impl::Floor => "floor",
            Impl::Rslock => "rslock",
            Impl::Rung(id, _) if *id == locks::libraries::rslock::RUNG.id => RSLOCK_MODEL,
            Impl::Rung(id, _)
            | Impl::Etcd(id)
            | Impl::ZooKeeper(id)
            | Impl::Postgres(id)
            | Impl::MySql(id) => id,
        }
    }

    /// The implementation [`Impl::name`] names, a rung with its default
    /// wait; `None` for a name that is none of them.
    pub fn named(name: &str) -> Option<Impl> {
        match name {
            "floor" => Some(Impl::Floor),
            "rslock" => Some(Impl::Rslock),
            RSLOCK_MODEL => Some(Impl::Rung(locks::libraries::rslock::RUNG.id, Wait::Fixed)),
            id => locks::rung(id).map(|rung| {
                Service::ALL
                    .into_iter()
                    .find(|s| s.id() == rung.service)
                    .map_or(Impl::Rung(rung.id, Wait::Fixed), |s| s.rung(rung.id))
            }),
        }
    }

    /// The wait label: the rung's strategy, or what the floor and rslock do.
    pub fn wait(&self) -> &'static str {
        match self {
            Impl::Floor => "poll-1ms",
            Impl::Rslock => "rslock-default",
            Impl::Rung(_, w) => w.label(),
            Impl::Etcd(id) if *id == locks::etcd::rungs::LOCK_RPC.id => "in-member",
            Impl::Etcd(_) => "watch",
            Impl::ZooKeeper(id) if *id == locks::zookeeper::rungs::HERD.id => "watch-parent",
            Impl::ZooKeeper(_) => "watch",
            Impl::Postgres(_) | Impl::MySql(_) => Wait::Fixed.label(),
        }
    }

    /// Whether it is a rung that takes its lock over several nodes (the
    /// floor and rslock use every node they are given).
    pub fn multi_node(&self) -> bool {
        match self {
            Impl::Rung(id, _) => locks::rung(id).is_some_and(|r| r.multi_node),
            Impl::Floor
            | Impl::Rslock
            | Impl::Etcd(_)
            | Impl::ZooKeeper(_)
            | Impl::Postgres(_)
            | Impl::MySql(_) => false,
        }
    }

    /// The service other than Redis it runs on, if any.
    pub fn service(&self) -> Option<Service> {
        match self {
            Impl::Etcd(_) => Some(Service::Etcd),
            Impl::ZooKeeper(_) => Some(Service::ZooKeeper),
            Impl::Postgres(_) => Some(Service::Postgres),
            Impl::MySql(_) => Some(Service::MySql),
            Impl::Floor | Impl::Rslock | Impl::Rung(..) => None,
        }
    }

    /// `name` plus the wait strategy where it is not the default.
    pub fn label(&self) -> String {
        match self {
            Impl::Rung(_, w) if *w != Wait::Fixed => format!("{}+{}", self.name(), w.label()),
            other => other.name().to_string(),
        }
    }
}

/// A lock held by one of the implementations.
pub enum Held {
    /// The floor's token.
    Floor(String),
    /// An rslock lock.
    Rslock(rslock::Lock),
    /// A rung's lease.
    Rung(Lease),
}

/// One implementation, connected to its nodes.
pub enum Client {
    /// The floor.
    Floor(Floor),
    /// rslock.
    Rslock(rslock::LockManager),
    /// A rung.
    Rung(Box<dyn Lock>),
}

/// Settings every client of a workload shares.
#[derive(Debug, Clone, Copy)]
pub struct Common {
    /// Lease TTL.
    pub ttl: Duration,
    /// Acquire budget of the rungs.
    pub max_wait: Duration,
}

impl Client {
    /// Connects `which` to `nodes` (single-node implementations use the
    /// first), each with connections of its own.
    pub async fn connect(
        which: Impl,
        nodes: &[Node],
        common: Common,
        seed: u64,
    ) -> anyhow::Result<Client> {
        Client::connect_counting(which, nodes, common, seed, Arc::default()).await
    }

    /// As [`Client::connect`], a rung counting its waiters' wake-ups in
    /// `wakeups` (shared by the clients that are counted together). An
    /// etcd rung ([`Impl::Etcd`]) talks to `nodes[0]` as an etcd member, a
    /// ZooKeeper rung ([`Impl::ZooKeeper`]) to it as a ZooKeeper server, a
    /// database rung ([`Impl::Postgres`], [`Impl::MySql`]) to it as its
    /// database's server.
    pub async fn connect_counting(
        which: Impl,
        nodes: &[Node],
        common: Common,
        seed: u64,
        wakeups: Arc<Wakeups>,
    ) -> anyhow::Result<Client> {
        let config = |wait: Wait| LockConfig {
            ttl: common.ttl,
            max_wait: common.max_wait,
            wait: wait.strategy(),
            node_timeout: Duration::from_millis(250),
        };
        let context =
            || LockContext::new(Arc::new(SystemClock::new()), seed).with_wakeups(wakeups.clone());
        match which {
            Impl::Etcd(id) => {
                let member = nodes
                    .first()
                    .ok_or_else(|| anyhow::anyhow!("{id}: no etcd member to connect to"))?;
                // The wait strategy is the rung's own; the default is
                // never read.
                let lock = locks::etcd::rungs::build(
                    id,
                    TcpDialer::new(member.addr.clone()),
                    context(),
                    config(Wait::Fixed),
                )
                .ok_or_else(|| anyhow::anyhow!("{id} is not an etcd rung"))?;
                Ok(Client::Rung(lock))
            }
            Impl::ZooKeeper(id) => {
                let server = nodes
                    .first()
                    .ok_or_else(|| anyhow::anyhow!("{id}: no ZooKeeper server to connect to"))?;
                // As for etcd, the wait is the rung's own; the session
                // timeout is the lease TTL.
                let lock = locks::zookeeper::rungs::build(
                    id,
                    vec![TcpDialer::new(server.addr.clone())],
                    context(),
                    config(Wait::Fixed),
                )
                .ok_or_else(|| anyhow::anyhow!("{id} is not a ZooKeeper rung"))?;
                Ok(Client::Rung(lock))
            }
            Impl::Postgres(id) | Impl::MySql(id) => {
                let server = nodes
                    .first()
                    .ok_or_else(|| anyhow::anyhow!("{id}: no database server to connect to"))?;
                // Built as the simulator and real mode build it: one
                // session, opened on the first statement. A reply may take
                // as long as any server's here: an fsync on a busy shared
                // disk can take far longer than the default second.
                let conn = ConnConfig {
                    connect_timeout: ANSWER_WITHIN,
                    response_timeout: ANSWER_WITHIN,
                };
                let lock = locks::database::rungs::build(
                    id,
                    TcpDialer::new(server.addr.clone()),
                    conn,
                    None,
                    context(),
                    config(Wait::Fixed),
                )
                .ok_or_else(|| anyhow::anyhow!("{id} is not a database rung"))?;
                Ok(Client::Rung(lock))
            }
            Impl::Floor => Ok(Client::Floor(Floor::connect(nodes, common.ttl).await?)),
            Impl::Rslock => {
                let urls: Vec<String> = nodes.iter().map(|n| n.url.clone()).collect();
                Ok(Client::Rslock(rslock::LockManager::new(urls)))
            }
            Impl::Rung(id, wait) => {
                let nodes = if which.multi_node() {
                    nodes
                } else {
                    &nodes[..1]
                };
                let conns: Vec<_> = nodes
                    .iter()
                    .map(|n| {
                        ReconnectingConnection::new(
                            TcpDialer::new(n.addr.clone()),
                            ConnConfig::default(),
                        )
                    })
                    .collect();
                for c in &conns {
                    c.connect().await?;
                }
                let mut ctx = context();
                if wait == Wait::Notify {
                    ctx = ctx.with_notifier(Arc::new(ReleaseNotifier::new(
                        TcpDialer::new(nodes[0].addr.clone()),
                        ConnConfig::default(),
                    )));
                }
                Ok(Client::Rung(locks::build(id, conns, ctx, config(wait))?))
            }
        }
    }

    /// One try without waiting (the uncontended cycle): `None` if taken.
    pub async fn try_acquire(
        &self,
        key: &str,
        owner: &Owner,
        ttl: Duration,
    ) -> anyhow::Result<Option<Held>> {
        match self {
            Client::Floor(f) => Ok(f.try_acquire(key).await?.map(Held::Floor)),
            Client::Rslock(lm) => match lm.lock(key, ttl).await {
                Ok(l) => Ok(Some(Held::Rslock(l))),
                Err(rslock::LockError::Unavailable) => Ok(None),
                Err(e) => Err(anyhow::anyhow!("rslock: {e}")),
            },
            Client::Rung(lock) => Ok(Some(Held::Rung(lock.acquire(key, owner).await?))),
        }
    }

    /// Acquires, waiting as the implementation does (the floor polls
    /// every 1 ms; rslock loops with its own retry; a rung uses its wait
    /// strategy). The caller bounds it with a timeout.
    pub async fn acquire(&self, key: &str, owner: &Owner, ttl: Duration) -> anyhow::Result<Held> {
        match self {
            Client::Floor(f) => {
                // Bounded by the caller's timeout; the cap is a backstop.
                for _ in 0..10_000_000u64 {
                    if let Some(token) = f.try_acquire(key).await? {
                        return Ok(Held::Floor(token));
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                anyhow::bail!("floor: gave up")
            }
            Client::Rslock(lm) => lm
                .acquire_no_guard(key, ttl)
                .await
                .map(Held::Rslock)
                .map_err(|e| anyhow::anyhow!("rslock: {e}")),
            Client::Rung(lock) => Ok(Held::Rung(lock.acquire(key, owner).await?)),
        }
    }

    /// The holder's validity check before a write (rungs only).
    pub async fn before_write(&self, held: &Held) -> anyhow::Result<()> {
        if let (Client::Rung(lock), Held::Rung(lease)) = (self, held) {
            lock.before_write(lease).await?;
        }
        Ok(())
    }

    /// Releases what [`Client::acquire`] returned.
    pub async fn release(&self, key: &str, held: Held) -> anyhow::Result<()> {
        match (self, held) {
            (Client::Floor(f), Held::Floor(token)) => f.release(key, &token).await,
            (Client::Rslock(lm), Held::Rslock(l)) => {
                lm.unlock(&l).await;
                Ok(())
            }
            (Client::Rung(lock), Held::Rung(lease)) => Ok(lock.release(&lease).await?),
            _ => anyhow::bail!("released with another implementation's lease"),
        }
    }
}

/// The floor: `SET key token NX PX ttl`, then `EVALSHA` of the
/// owner-checked release script, on one multiplexed connection per node,
/// sent to all nodes at once when there are several.
pub struct Floor {
    conns: Vec<MultiplexedConnection>,
    sha: String,
    ttl_ms: u64,
    next: AtomicU64,
    prefix: String,
}

/// Opens one multiplexed connection to `addr` the way the ladder does
/// (tokio stream, the crate's RESP codec), without the reconnect wrapper.
/// Dialing and the handshake are bounded by [`ANSWER_WITHIN`], each reply
/// by 5 s: a server that stops answering fails the run, never hangs it.
pub async fn raw_connection(addr: &str) -> anyhow::Result<MultiplexedConnection> {
    let connect = async {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let config =
            AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(5)));
        let (conn, driver) =
            MultiplexedConnection::new_with_config(&RedisConnectionInfo::default(), stream, config)
                .await?;
        tokio::spawn(driver);
        anyhow::Ok(conn)
    };
    tokio::time::timeout(ANSWER_WITHIN, connect)
        .await
        .map_err(|_| {
            anyhow::anyhow!("{addr}: no connection within {} s", ANSWER_WITHIN.as_secs())
        })?
}

/// What follows `field` on its line of `INFO section` (e.g. `redis_version:`
/// of `server`); `None` when the server does not say or cannot be asked.
pub async fn info_field(
    conn: &MultiplexedConnection,
    section: &str,
    field: &str,
) -> Option<String> {
    let mut c = conn.clone();
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query_async(&mut c)
        .await
        .ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(field))
        .map(str::to_string)
}

impl Floor {
    /// Connects to every node and loads the release script there.
    pub async fn connect(nodes: &[Node], ttl: Duration) -> anyhow::Result<Floor> {
        let mut conns = Vec::new();
        let mut sha = String::new();
        for n in nodes {
            let mut c = raw_connection(&n.addr).await?;
            sha = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(locks::scripts::RELEASE_LUA)
                .query_async(&mut c)
                .await?;
            conns.push(c);
        }
        Ok(Floor {
            conns,
            sha,
            ttl_ms: ttl.as_millis().max(1) as u64,
            next: AtomicU64::new(0),
            prefix: format!("{:08x}", std::process::id()),
        })
    }

    /// One `SET NX PX` round on every node; the token when a majority set it.
    pub async fn try_acquire(&self, key: &str) -> anyhow::Result<Option<String>> {
        let token = format!(
            "{}-{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let replies = join_all(self.conns.iter().map(|c| {
            let mut c = c.clone();
            let token = &token;
            async move {
                redis::cmd("SET")
                    .arg(key)
                    .arg(token)
                    .arg("NX")
                    .arg("PX")
                    .arg(self.ttl_ms)
                    .query_async::<Option<String>>(&mut c)
                    .await
            }
        }))
        .await;
        let granted = replies.iter().filter(|r| matches!(r, Ok(Some(_)))).count();
        if granted > self.conns.len() / 2 {
            Ok(Some(token))
        } else {
            if granted > 0 {
                self.release(key, &token).await?;
            }
            if let Some(Err(e)) = replies.into_iter().find(|r| r.is_err()) {
                return Err(e.into());
            }
            Ok(None)
        }
    }

    /// `EVALSHA` release on every node at once.
    pub async fn release(&self, key: &str, token: &str) -> anyhow::Result<()> {
        let replies = join_all(self.conns.iter().map(|c| {
            let mut c = c.clone();
            async move {
                redis::cmd("EVALSHA")
                    .arg(&self.sha)
                    .arg(1)
                    .arg(key)
                    .arg(token)
                    .query_async::<i64>(&mut c)
                    .await
            }
        }))
        .await;
        for r in replies {
            r?;
        }
        Ok(())
    }

    /// `PING` on the first node: the raw round trip.
    pub async fn ping(&self) -> anyhow::Result<()> {
        let mut c = self.conns[0].clone();
        let _: String = redis::cmd("PING").query_async(&mut c).await?;
        Ok(())
    }
}
