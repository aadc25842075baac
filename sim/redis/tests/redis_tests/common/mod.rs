//! What the turmoil tests of the node share: the simulation they run in,
//! and reaching a node the way a client does.

#![allow(dead_code)] // each test file uses its own part of the helpers

pub mod real_tcp;

use std::ops::RangeInclusive;
use std::time::Duration;

use redis::aio::MultiplexedConnection;

/// The simulation's tick.
pub const TICK: Duration = Duration::from_millis(1);

/// A turmoil simulation seeded with `seed`, of at most `duration`, ticking
/// every [`TICK`], whose messages each take a latency within `latency`.
pub fn simulation(
    seed: u64,
    duration: Duration,
    latency: RangeInclusive<Duration>,
) -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(duration)
        .tick_duration(TICK)
        .min_message_latency(*latency.start())
        .max_message_latency(*latency.end())
        .build()
}

/// Connects the unmodified `redis` crate client to the node on `host`
/// through turmoil's TCP, with one-second connect and response timeouts
/// (so a test that reaches a dead node fails instead of hanging).
pub async fn connect(host: &str) -> redis::RedisResult<MultiplexedConnection> {
    connect_to(host, 6379).await
}

/// [`connect`] to a node listening on `port`.
pub async fn connect_to(host: &str, port: u16) -> redis::RedisResult<MultiplexedConnection> {
    let stream = tokio::time::timeout(
        Duration::from_secs(1),
        turmoil::net::TcpStream::connect((host, port)),
    )
    .await
    .map_err(|_| redis::RedisError::from(std::io::Error::other("connect timeout")))??;
    client_on(stream, Duration::from_secs(1)).await
}

/// The `redis` crate's client over `stream` (any byte stream: turmoil's
/// TCP, or a real socket), each reply awaited at most `response_timeout`;
/// its driver runs as a task of its own.
pub async fn client_on<S>(
    stream: S,
    response_timeout: Duration,
) -> redis::RedisResult<MultiplexedConnection>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (con, driver) = MultiplexedConnection::new_with_config(
        &redis::RedisConnectionInfo::default(),
        stream,
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(response_timeout)),
    )
    .await?;
    tokio::spawn(driver);
    Ok(con)
}
