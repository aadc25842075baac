//! What an etcd member counts of its own work, read from its `/metrics`
//! page: the requests it was sent, by gRPC method, and the fsyncs of its
//! write-ahead log. The etcd rows read them before and after each slice,
//! so that what a cycle costs the member is measured, not assumed.

use crate::client::ANSWER_WITHIN;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The counter of the member's write-ahead log fsyncs (the count of a
/// histogram of their durations).
const WAL_FSYNCS: &str = "etcd_disk_wal_fsync_duration_seconds_count";

/// The counter of the gRPC requests the member began serving, one series
/// per method.
const REQUESTS_STARTED: &str = "grpc_server_started_total";

/// One reading of a member's `/metrics` page (Prometheus text format).
#[derive(Debug, Clone)]
pub struct Metrics {
    /// Every sample line: its series (name and labels) and value.
    samples: Vec<(String, f64)>,
}

impl Metrics {
    /// Reads the page of the member whose client address is `addr`
    /// (`host:port`), within [`ANSWER_WITHIN`]. HTTP/1.0, so that the
    /// body comes whole, not in chunks.
    pub async fn read(addr: &str) -> anyhow::Result<Metrics> {
        let fetch = async {
            let mut stream = tokio::net::TcpStream::connect(addr).await?;
            stream
                .write_all(b"GET /metrics HTTP/1.0\r\nHost: etcd\r\n\r\n")
                .await?;
            let mut response = Vec::new();
            stream.read_to_end(&mut response).await?;
            anyhow::Ok(String::from_utf8_lossy(&response).into_owned())
        };
        let response = tokio::time::timeout(ANSWER_WITHIN, fetch)
            .await
            .map_err(|_| anyhow::anyhow!("{addr}: no /metrics page within {ANSWER_WITHIN:?}"))??;
        let (head, body) = response
            .split_once("\r\n\r\n")
            .ok_or_else(|| anyhow::anyhow!("{addr}: /metrics answered without a body"))?;
        anyhow::ensure!(
            head.starts_with("HTTP/1.") && head.lines().next().is_some_and(|l| l.contains(" 200")),
            "{addr}: /metrics answered {:?}",
            head.lines().next().unwrap_or("")
        );
        Ok(Metrics::parse(body))
    }

    /// The samples of a page in Prometheus text format; comments and
    /// lines that are not samples are left out.
    pub fn parse(text: &str) -> Metrics {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                Some((series.to_string(), value.trim().parse().ok()?))
            })
            .collect();
        Metrics { samples }
    }

    /// The sum of every series of `name` whose labels contain each of
    /// `labels` (`key="value"`); 0 when there is none.
    fn sum(&self, name: &str, labels: &[&str]) -> f64 {
        self.samples
            .iter()
            .filter(|(series, _)| {
                let (n, rest) = series.split_once('{').unwrap_or((series, ""));
                n == name && labels.iter().all(|l| rest.contains(l))
            })
            .map(|(_, v)| v)
            .sum()
    }

    /// The write-ahead log's fsyncs so far.
    pub fn wal_fsyncs(&self) -> f64 {
        self.sum(WAL_FSYNCS, &[])
    }

    /// The requests of gRPC method `method` (`LeaseGrant`, `Txn`, ...)
    /// begun so far, of every service.
    pub fn requests(&self, method: &str) -> f64 {
        self.sum(REQUESTS_STARTED, &[&format!("grpc_method=\"{method}\"")])
    }

    /// Every gRPC method begun at least once, with its count.
    pub fn requests_by_method(&self) -> Vec<(String, f64)> {
        let mut methods: Vec<(String, f64)> = Vec::new();
        for (series, value) in &self.samples {
            let Some(rest) = series.strip_prefix(REQUESTS_STARTED) else {
                continue;
            };
            let Some(method) = rest
                .split("grpc_method=\"")
                .nth(1)
                .and_then(|m| m.split('"').next())
            else {
                continue;
            };
            match methods.iter_mut().find(|(m, _)| m == method) {
                Some((_, sum)) => *sum += value,
                None => methods.push((method.to_string(), *value)),
            }
        }
        methods.retain(|(_, n)| *n > 0.0);
        methods
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# HELP etcd_disk_wal_fsync_duration_seconds The latency\n\
        # TYPE etcd_disk_wal_fsync_duration_seconds histogram\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 5\n\
        etcd_disk_wal_fsync_duration_seconds_sum 0.0067\n\
        etcd_disk_wal_fsync_duration_seconds_count 7\n\
        grpc_server_started_total{grpc_method=\"LeaseGrant\",grpc_service=\"etcdserverpb.Lease\",grpc_type=\"unary\"} 3\n\
        grpc_server_started_total{grpc_method=\"Put\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 1\n\
        grpc_server_started_total{grpc_method=\"Range\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 0\n";

    #[test]
    fn the_counters_are_read_off_their_series() {
        let m = Metrics::parse(PAGE);
        assert_eq!(m.wal_fsyncs(), 7.0);
        assert_eq!(m.requests("LeaseGrant"), 3.0);
        assert_eq!(m.requests("Txn"), 0.0);
        assert_eq!(
            m.requests_by_method(),
            [("LeaseGrant".to_string(), 3.0), ("Put".to_string(), 1.0)]
        );
    }
}
