//! What the turmoil tests of the node share: reaching a node the way a
//! client does.

use std::time::Duration;

use redis::aio::MultiplexedConnection;

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
    let (con, driver) = MultiplexedConnection::new_with_config(
        &redis::RedisConnectionInfo::default(),
        stream,
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(1))),
    )
    .await?;
    tokio::spawn(driver);
    Ok(con)
}
