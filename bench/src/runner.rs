//! The benchmark run: servers, placement, the interleaved rounds of every
//! workload, and the report.

use crate::client::{Client, Common, Impl, Node, Wait, raw_connection};
use crate::env::{self, CLIENT_CPU, Machine, Placement, Proc};
use crate::report::{
    ContentionRow, InventoryRow, Report, RttRow, Settings, TargetRow, Touched, UncontendedRow,
    WatchdogRow,
};
use crate::stats::{Rounds, histogram, median, quantile_us, round3};
use crate::workload;
use harness::RedisServer;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What `locklab bench` was asked to do.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Short slices and few rounds (about a minute and a half).
    pub quick: bool,
    /// Servers to use instead of starting our own (`redis://host:port`).
    pub redis: Vec<String>,
    /// Where the report goes (`reports/` by default).
    pub out: PathBuf,
    /// Print `bench.json` as the last line of standard output.
    pub json: bool,
    /// Pin client and servers to CPUs (off in tests, which share the CPUs
    /// with other tests).
    pub pin: bool,
    /// Override the uncontended slice length, ms (tests use a few ms).
    pub slice_ms: Option<u64>,
    /// Override the number of rounds.
    pub rounds: Option<u32>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            quick: false,
            redis: Vec::new(),
            out: PathBuf::from("reports"),
            json: false,
            pin: true,
            slice_ms: None,
            rounds: None,
        }
    }
}

/// Exit code: the run completed and the report was written.
pub const EXIT_OK: u8 = 0;
/// Exit code: bad input or harness error (DESIGN.md's code 3).
pub const EXIT_HARNESS: u8 = 3;
/// Exit code: interrupted by Ctrl-C (servers stopped, own keys deleted).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs the benchmark and writes the report; returns the process exit code
/// ([`EXIT_OK`], [`EXIT_HARNESS`] or [`EXIT_INTERRUPTED`]). Progress goes
/// to standard error; with `json`, `bench.json` is the last stdout line.
pub fn run(options: BenchOptions) -> u8 {
    match run_inner(options) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bench: error: {e:#}");
            EXIT_HARNESS
        }
    }
}

/// How long things take, from the options.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    slice: Duration,
    contention_slice: Duration,
    rounds: u32,
    contention_rounds: u32,
    watchdog_cs_ms: &'static [u64],
    watchdog_rounds: u32,
}

impl Sizes {
    fn from(options: &BenchOptions) -> Sizes {
        let (slice_ms, rounds) = if options.quick { (250, 3) } else { (1_000, 5) };
        let slice_ms = options.slice_ms.unwrap_or(slice_ms).max(1);
        let rounds = options.rounds.unwrap_or(rounds).max(1);
        Sizes {
            slice: Duration::from_millis(slice_ms),
            contention_slice: Duration::from_millis(slice_ms * 8 / 5),
            rounds,
            contention_rounds: if options.quick {
                rounds.min(2)
            } else {
                rounds.min(3)
            },
            watchdog_cs_ms: if options.quick {
                &[20, 200]
            } else {
                &[10, 100, 1_000]
            },
            watchdog_rounds: if options.quick { 1 } else { rounds.min(3) },
        }
    }
}

const TTL: Duration = Duration::from_millis(10_000);
const MAX_WAIT: Duration = Duration::from_secs(60);
const COMMON: Common = Common {
    ttl: TTL,
    max_wait: MAX_WAIT,
};
/// Watchdog TTL: short, so that long sections need many renewals.
const WATCHDOG_TTL: Duration = Duration::from_millis(60);
const WORKERS: [usize; 4] = [1, 4, 16, 64];
const MANY_KEYS: usize = 64;
const BUYERS: usize = 16;

fn run_inner(options: BenchOptions) -> anyhow::Result<u8> {
    let sizes = Sizes::from(&options);
    let machine = Machine::detect();
    let cpus = machine.cpus;
    let own = options.redis.is_empty();
    let pin = options.pin && env::taskset_available();

    // Servers first (they are killed on drop: at return, on error, and
    // while unwinding from a panic), then the client's own pinning.
    let servers: Vec<RedisServer> = if own {
        eprintln!("bench: starting 5 redis-server processes on loopback");
        RedisServer::start_many(5).map_err(|e| anyhow::anyhow!("{e}"))?
    } else {
        Vec::new()
    };
    let nodes: Vec<Node> = if own {
        servers
            .iter()
            .map(|s| Node {
                addr: s.addr().to_string(),
                url: s.url(),
            })
            .collect()
    } else {
        options
            .redis
            .iter()
            .map(|u| Node::from_url(u))
            .collect::<anyhow::Result<_>>()?
    };
    let me = std::process::id();
    let pinned = pin
        && env::pin(me, &CLIENT_CPU.to_string())
        && servers
            .iter()
            .enumerate()
            .all(|(i, s)| env::pin(s.pid(), &env::server_cpu(i, cpus).to_string()));
    let prefix = format!(
        "locklab:bench:{me}-{:x}:",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    );
    if !own {
        eprintln!(
            "bench: using {} server(s) not started here; touching only keys and channels under {prefix:?}, never flushing",
            nodes.len()
        );
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut ctx = Ctx {
        sizes,
        nodes: nodes.clone(),
        prefix: prefix.clone(),
        started: Instant::now(),
        servers: servers.iter().map(|s| s.pid()).collect(),
        cpus,
        pinned,
        report: None,
        cdf: Vec::new(),
    };
    let outcome = rt.block_on(async {
        tokio::select! {
            r = ctx.measure() => Some(r),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    // Tasks of an interrupted run are dropped with the runtime below; our
    // keys on servers we did not start are deleted in a fresh runtime.
    drop(rt);
    let deleted = if own {
        0
    } else {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(delete_own_keys(&nodes, &prefix))
    };
    if !own {
        eprintln!(
            "bench: touched keys and channels under {prefix:?} on {}; deleted {deleted} keys; nothing else",
            options.redis.join(", ")
        );
    }
    let Some(result) = outcome else {
        eprintln!("bench: interrupted; servers stopped");
        return Ok(EXIT_INTERRUPTED);
    };
    result?;
    let mut report = ctx.report.take().expect("measured");

    report.machine = machine;
    let (policy, sharing) = env::describe(servers.len(), cpus, pinned);
    report.placement = Placement {
        policy,
        runtime:
            "tokio current_thread (one thread: every client task, connection driver and timer)"
                .to_string(),
        pinned,
        client: Proc {
            role: "client".to_string(),
            pid: me,
            cpus_allowed: env::affinity(me),
            last_cpu: env::last_cpu(me),
        },
        servers: servers
            .iter()
            .enumerate()
            .map(|(i, s)| Proc {
                role: format!("node {i}"),
                pid: s.pid(),
                cpus_allowed: env::affinity(s.pid()),
                last_cpu: env::last_cpu(s.pid()),
            })
            .collect(),
        sharing,
    };
    report.settings.own_servers = own;
    report.settings.quick = options.quick;
    report.touched = Touched {
        key_prefix: prefix,
        external_servers: options.redis.clone(),
        keys_deleted: deleted,
    };
    drop(servers);

    std::fs::create_dir_all(&options.out)?;
    let json = serde_json::to_string(&report)?;
    std::fs::write(options.out.join("bench.json"), format!("{json}\n"))?;
    std::fs::write(options.out.join("bench.md"), report.markdown())?;
    let plots: [(&str, &Draw<'_>); 4] = [
        ("bench-latency-cdf.svg", &|p| {
            crate::plot::latency_cdf(p, &ctx.cdf)
        }),
        ("bench-throughput.svg", &|p| {
            crate::plot::throughput(p, &report)
        }),
        ("bench-wait-p999.svg", &|p| {
            crate::plot::wait_p999(p, &report)
        }),
        ("bench-redlock-scaling.svg", &|p| {
            crate::plot::redlock_scaling(p, &report)
        }),
    ];
    for (file, draw) in plots {
        if let Err(e) = draw(&options.out.join(file)) {
            eprintln!("bench: plot {file}: {e}");
        }
    }
    eprintln!(
        "bench: wrote {}/bench.md, bench.json and 4 plots",
        options.out.display()
    );
    for t in &report.targets {
        eprintln!(
            "bench: target {}: {} (goal {}) {}",
            t.target,
            round3(t.measured),
            t.goal,
            if t.met { "met" } else { "NOT met" }
        );
    }
    if options.json {
        println!("{json}");
    }
    Ok(EXIT_OK)
}

/// One plot drawn into a file.
type Draw<'a> = dyn Fn(&std::path::Path) -> Result<(), Box<dyn std::error::Error>> + 'a;

/// Per implementation of a contention cell: rates by round, merged wait
/// histogram, longest wait, fairness by round, errors.
type Cell = (Rounds, Histogram<u64>, u64, Vec<f64>, u64);

/// Deletes every key under `prefix` (SCAN + UNLINK, bounded), never more.
async fn delete_own_keys(nodes: &[Node], prefix: &str) -> u64 {
    let mut deleted = 0u64;
    for n in nodes {
        let Ok(Ok(mut c)) =
            tokio::time::timeout(Duration::from_secs(2), raw_connection(&n.addr)).await
        else {
            continue;
        };
        let mut cursor: u64 = 0;
        // A bounded walk: 100k SCAN pages is far beyond any run's keys.
        for _ in 0..100_000 {
            let reply: redis::RedisResult<(u64, Vec<String>)> = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{prefix}*"))
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut c)
                .await;
            let Ok((next, keys)) = reply else { break };
            // Only keys that really carry our prefix (MATCH treats glob
            // characters in the prefix as patterns).
            let ours: Vec<&String> = keys.iter().filter(|k| k.starts_with(prefix)).collect();
            if !ours.is_empty() {
                let n: u64 = redis::cmd("UNLINK")
                    .arg(&ours)
                    .query_async(&mut c)
                    .await
                    .unwrap_or(0);
                deleted += n;
            }
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
    }
    deleted
}

/// The state of a run in progress.
struct Ctx {
    sizes: Sizes,
    nodes: Vec<Node>,
    prefix: String,
    started: Instant,
    servers: Vec<u32>,
    cpus: usize,
    pinned: bool,
    report: Option<Report>,
    /// Latency histograms of the single-node uncontended group, for the CDF.
    cdf: Vec<(String, Histogram<u64>)>,
}

/// Per implementation: per-round rates and merged histogram.
struct Measured {
    which: Impl,
    rounds: Rounds,
    hist: Histogram<u64>,
}

impl Ctx {
    fn progress(&self, what: &str) {
        let t = self.started.elapsed().as_secs();
        eprintln!("[{:02}:{:02}] {what}", t / 60, t % 60);
    }

    async fn measure(&mut self) -> anyhow::Result<()> {
        let n = self.nodes.len();
        let mut report = Report {
            machine: Machine::detect(),
            placement: Placement {
                policy: String::new(),
                runtime: String::new(),
                pinned: false,
                client: Proc {
                    role: String::new(),
                    pid: 0,
                    cpus_allowed: String::new(),
                    last_cpu: None,
                },
                servers: Vec::new(),
                sharing: String::new(),
            },
            versions: self.versions().await,
            settings: Settings {
                quick: false,
                slice_ms: self.sizes.slice.as_millis() as u64,
                contention_slice_ms: self.sizes.contention_slice.as_millis() as u64,
                rounds: self.sizes.rounds,
                ttl_ms: TTL.as_millis() as u64,
                own_servers: true,
            },
            uncontended: Vec::new(),
            uncontended_same_cpu: Vec::new(),
            contention: Vec::new(),
            raw_rtt: Vec::new(),
            inventory: Vec::new(),
            watchdog: Vec::new(),
            targets: Vec::new(),
            touched: Touched::default(),
        };

        // 1. Uncontended, one node, client and servers on different CPUs.
        let mut single: Vec<Impl> = vec![Impl::Floor, Impl::Rslock];
        for rung in locks::LADDER.iter().filter(|r| r.id != "no-lock") {
            single.push(Impl::Rung(rung.id, Wait::Fixed));
        }
        single.push(Impl::Rung("lua-release", Wait::Notify));
        let (measured, ping) = self.uncontended_group(&single, 1, "split").await?;
        report.raw_rtt.push(rtt_row("split", &ping));
        report.uncontended.extend(rows(&measured, 1));
        self.cdf = measured
            .iter()
            .map(|m| (m.which.label(), m.hist.clone()))
            .collect();

        // 2. The same CPU for client and node 0 (when we own and pin it).
        if self.pinned && !self.servers.is_empty() {
            env::pin(self.servers[0], &CLIENT_CPU.to_string());
            // Same-CPU round trips are short and steady here (cross-CPU
            // wake-ups of a virtual machine are not), so the closest
            // comparisons are repeated in this placement.
            let near = [
                Impl::Floor,
                Impl::Rslock,
                Impl::Rung("set-nx-px", Wait::Fixed),
                Impl::Rung("lua-release", Wait::Fixed),
                Impl::Rung("lua-release", Wait::Notify),
                Impl::Rung("redlock", Wait::Fixed),
                Impl::Rung("fenced", Wait::Fixed),
            ];
            let r = self.uncontended_group(&near, 1, "same-cpu").await;
            env::pin(self.servers[0], &env::server_cpu(0, self.cpus).to_string());
            let (measured, ping) = r?;
            report.raw_rtt.push(rtt_row("same-cpu", &ping));
            report.uncontended_same_cpu.extend(rows(&measured, 1));
        }

        // 3. Redlock scaling: N = 3 and 5 (N = 1 is in group 1).
        for nodes in [3usize, 5] {
            if nodes > n {
                continue;
            }
            let trio = [
                Impl::Floor,
                Impl::Rung("redlock", Wait::Fixed),
                Impl::Rslock,
            ];
            let (measured, _) = self
                .uncontended_group(&trio, nodes, &format!("{nodes} nodes"))
                .await?;
            report.uncontended.extend(rows(&measured, nodes));
        }

        // 4. Contention.
        let contenders = [
            Impl::Floor,
            Impl::Rslock,
            Impl::Rung("lua-release", Wait::Fixed),
            Impl::Rung("lua-release", Wait::Backoff),
            Impl::Rung("lua-release", Wait::Notify),
        ];
        report.contention = self.contention(&contenders).await?;

        // 5. Inventory.
        report.inventory = self.inventory().await?;

        // 6. Watchdog.
        report.watchdog = self.watchdog().await?;

        report.targets = targets(&report);
        self.report = Some(report);
        Ok(())
    }

    async fn versions(&self) -> BTreeMap<String, String> {
        let mut v = BTreeMap::new();
        if let Ok(mut c) = raw_connection(&self.nodes[0].addr).await {
            let info: String = redis::cmd("INFO")
                .arg("server")
                .query_async(&mut c)
                .await
                .unwrap_or_default();
            if let Some(ver) = info.lines().find_map(|l| l.strip_prefix("redis_version:")) {
                v.insert("redis-server".to_string(), ver.trim().to_string());
            }
        }
        v.insert("rustc".to_string(), env::rustc_version().to_string());
        v.insert("locklab".to_string(), env!("CARGO_PKG_VERSION").to_string());
        for (name, version) in env::crate_versions() {
            v.entry(name)
                .and_modify(|e: &mut String| {
                    e.push_str(" + ");
                    e.push_str(&version);
                })
                .or_insert(version);
        }
        v
    }

    /// Interleaved rounds of single-task acquire + release (and `PING`).
    async fn uncontended_group(
        &self,
        impls: &[Impl],
        nodes: usize,
        tag: &str,
    ) -> anyhow::Result<(Vec<Measured>, Measured)> {
        let nodes_list = &self.nodes[..nodes];
        let mut clients = Vec::new();
        for (i, which) in impls.iter().enumerate() {
            clients.push(Client::connect(*which, nodes_list, COMMON, 1 + i as u64).await?);
        }
        let floor = crate::client::Floor::connect(&nodes_list[..1], TTL).await?;
        let mut measured: Vec<Measured> = impls
            .iter()
            .map(|w| Measured {
                which: *w,
                rounds: Rounds::default(),
                hist: histogram(),
            })
            .collect();
        let mut ping = Measured {
            which: Impl::Floor,
            rounds: Rounds::default(),
            hist: histogram(),
        };
        let k = impls.len() + 1;
        for round in 0..self.sizes.rounds {
            for step in 0..k {
                // Rotate the order each round so no implementation always
                // runs first or right after the same neighbour.
                let i = (step + round as usize) % k;
                if i == impls.len() {
                    let s = workload::ping(&floor, self.sizes.slice).await;
                    self.progress(&format!(
                        "uncontended [{tag}] round {}/{}: PING {:.0}/s p50 {} µs",
                        round + 1,
                        self.sizes.rounds,
                        s.rate(),
                        quantile_us(&s.hist, 0.5)
                    ));
                    ping.rounds.0.push(s.rate());
                    let _ = ping.hist.add(&s.hist);
                    continue;
                }
                let key = format!("{}u:{}:{}", self.prefix, nodes, impls[i].label());
                let s = workload::uncontended(&clients[i], &key, TTL, self.sizes.slice).await;
                self.progress(&format!(
                    "uncontended [{tag}] round {}/{}: {} {:.0} cycles/s p50 {} µs{}",
                    round + 1,
                    self.sizes.rounds,
                    impls[i].label(),
                    s.rate(),
                    quantile_us(&s.hist, 0.5),
                    if s.errors > 0 {
                        format!(" ({} errors)", s.errors)
                    } else {
                        String::new()
                    }
                ));
                measured[i].rounds.0.push(s.rate());
                let _ = measured[i].hist.add(&s.hist);
            }
        }
        Ok((measured, ping))
    }

    async fn contention(&self, impls: &[Impl]) -> anyhow::Result<Vec<ContentionRow>> {
        let mut clients = Vec::new();
        for (i, which) in impls.iter().enumerate() {
            clients.push(Arc::new(
                Client::connect(*which, &self.nodes[..1], COMMON, 100 + i as u64).await?,
            ));
        }
        let mut out = Vec::new();
        for keys in [1usize, MANY_KEYS] {
            for workers in WORKERS {
                let mut per: Vec<Cell> = impls
                    .iter()
                    .map(|_| (Rounds::default(), histogram(), 0, Vec::new(), 0))
                    .collect();
                for round in 0..self.sizes.contention_rounds {
                    for step in 0..impls.len() {
                        let i = (step + round as usize) % impls.len();
                        let prefix = format!(
                            "{}c:{workers}:{keys}:{}:{round}:",
                            self.prefix,
                            impls[i].label()
                        );
                        let s = workload::contention(
                            clients[i].clone(),
                            &prefix,
                            workers,
                            keys,
                            TTL,
                            self.sizes.contention_slice,
                        )
                        .await;
                        self.progress(&format!(
                            "contention {workers} workers / {keys} key(s) round {}/{}: {} {:.0} acq/s wait p99.9 {} µs fairness {:.2}",
                            round + 1,
                            self.sizes.contention_rounds,
                            impls[i].label(),
                            s.rate(),
                            quantile_us(&s.wait, 0.999),
                            s.fairness()
                        ));
                        let p = &mut per[i];
                        p.0.0.push(s.rate());
                        let _ = p.1.add(&s.wait);
                        p.2 = p.2.max(s.wait_max_us);
                        p.3.push(s.fairness());
                        p.4 += s.errors;
                    }
                }
                let floor = per[0].0.clone();
                let rs = per[1].0.clone();
                for (which, (rounds, hist, max, fair, errors)) in impls.iter().zip(per) {
                    let sp = rounds.spread();
                    out.push(ContentionRow {
                        impl_: which.name().to_string(),
                        wait: which.wait().to_string(),
                        nodes: 1,
                        workers,
                        keys,
                        acq_per_s: round3(sp.median),
                        acq_per_s_min: round3(sp.min),
                        acq_per_s_max: round3(sp.max),
                        wait_p50_us: quantile_us(&hist, 0.5),
                        wait_p99_us: quantile_us(&hist, 0.99),
                        wait_p999_us: quantile_us(&hist, 0.999),
                        wait_max_us: max,
                        fairness: round3(median(&fair)),
                        errors,
                        vs_floor: rounds.ratio_to(&floor).map(round3),
                        vs_rslock: rounds.ratio_to(&rs).map(round3),
                    });
                }
            }
        }
        Ok(out)
    }

    async fn inventory(&self) -> anyhow::Result<Vec<InventoryRow>> {
        let nodes = self.nodes.len().min(5);
        let mut impls = vec![Impl::Floor, Impl::Rslock];
        for rung in locks::LADDER {
            let wait = if rung.publishes {
                Wait::Notify
            } else {
                Wait::Backoff
            };
            impls.push(Impl::Rung(rung.id, wait));
        }
        let mut clients = Vec::new();
        for (i, which) in impls.iter().enumerate() {
            let on = if *which == Impl::Rung("redlock", Wait::Notify) {
                nodes
            } else {
                1
            };
            clients.push(Arc::new(
                Client::connect(*which, &self.nodes[..on], COMMON, 200 + i as u64).await?,
            ));
        }
        let stock_conn = raw_connection(&self.nodes[0].addr).await?;
        let mut per: Vec<(Rounds, i64, u64)> =
            impls.iter().map(|_| (Rounds::default(), 0, 0)).collect();
        let rounds = self.sizes.contention_rounds;
        for round in 0..rounds {
            for step in 0..impls.len() {
                let i = (step + round as usize) % impls.len();
                let prefix = format!("{}i:{}:{round}:", self.prefix, impls[i].label());
                let s = workload::inventory(
                    clients[i].clone(),
                    &stock_conn,
                    &prefix,
                    BUYERS,
                    TTL,
                    self.sizes.contention_slice,
                )
                .await?;
                let rate = s.sales as f64 / s.elapsed.as_secs_f64().max(1e-9);
                self.progress(&format!(
                    "inventory round {}/{rounds}: {} {:.0} sales/s, oversold {}",
                    round + 1,
                    impls[i].label(),
                    rate,
                    s.oversold
                ));
                per[i].0.0.push(rate);
                per[i].1 += s.oversold;
                per[i].2 += s.errors;
            }
        }
        let floor = per[0].0.clone();
        let rs = per[1].0.clone();
        Ok(impls
            .iter()
            .zip(per)
            .map(|(which, (rounds, oversold, errors))| InventoryRow {
                impl_: which.name().to_string(),
                wait: which.wait().to_string(),
                nodes: if *which == Impl::Rung("redlock", Wait::Notify) {
                    nodes
                } else {
                    1
                },
                sales_per_s: round3(rounds.spread().median),
                oversold,
                errors,
                vs_floor: rounds.ratio_to(&floor).map(round3),
                vs_rslock: rounds.ratio_to(&rs).map(round3),
            })
            .collect())
    }

    async fn watchdog(&self) -> anyhow::Result<Vec<WatchdogRow>> {
        const HOLDERS: usize = 4;
        let wd = Arc::new(
            Client::connect(
                Impl::Rung("watchdog", Wait::Fixed),
                &self.nodes[..1],
                Common {
                    ttl: WATCHDOG_TTL,
                    max_wait: MAX_WAIT,
                },
                300,
            )
            .await?,
        );
        let base = Arc::new(
            Client::connect(
                Impl::Rung("lua-release", Wait::Fixed),
                &self.nodes[..1],
                COMMON,
                301,
            )
            .await?,
        );
        let stats_conn = raw_connection(&self.nodes[0].addr).await?;
        let mut out = Vec::new();
        for &cs_ms in self.sizes.watchdog_cs_ms {
            let cs = Duration::from_millis(cs_ms);
            let slice = (self.sizes.slice * 4).max(cs * 3);
            let (mut wd_rounds, mut base_rounds) = (Rounds::default(), Rounds::default());
            let (mut renewals, mut holds, mut lost) = (0u64, 0u64, 0u64);
            for round in 0..self.sizes.watchdog_rounds {
                let prefix = format!("{}w:{cs_ms}:{round}:", self.prefix);
                let before = workload::evalsha_calls(&stats_conn).await;
                let s =
                    workload::long_sections(wd.clone(), &prefix, HOLDERS, WATCHDOG_TTL, cs, slice)
                        .await;
                let after = workload::evalsha_calls(&stats_conn).await;
                // Each hold is one acquire and one release script; the
                // rest are renewals (and the two INFO reads are not EVALSHA).
                renewals += after.saturating_sub(before).saturating_sub(2 * s.cycles);
                holds += s.cycles;
                lost += s.lost;
                let wd_rate = s.cycles as f64 / s.elapsed.as_secs_f64().max(1e-9);
                let b = workload::long_sections(
                    base.clone(),
                    &format!("{prefix}base:"),
                    HOLDERS,
                    TTL,
                    cs,
                    slice,
                )
                .await;
                let b_rate = b.cycles as f64 / b.elapsed.as_secs_f64().max(1e-9);
                self.progress(&format!(
                    "watchdog {cs_ms} ms sections: {wd_rate:.1} cycles/s (lua-release {b_rate:.1}), {} renewals, {} lost",
                    after.saturating_sub(before).saturating_sub(2 * s.cycles),
                    s.lost
                ));
                wd_rounds.0.push(wd_rate);
                base_rounds.0.push(b_rate);
            }
            out.push(WatchdogRow {
                cs_ms,
                ttl_ms: WATCHDOG_TTL.as_millis() as u64,
                renewals: if holds > 0 {
                    round3(renewals as f64 / holds as f64)
                } else {
                    0.0
                },
                cycles_per_s: round3(wd_rounds.spread().median),
                baseline_cycles_per_s: round3(base_rounds.spread().median),
                lost,
            });
        }
        Ok(out)
    }
}

fn rtt_row(placement: &str, ping: &Measured) -> RttRow {
    RttRow {
        placement: placement.to_string(),
        rtt_p50_us: quantile_us(&ping.hist, 0.5),
        rtt_p99_us: quantile_us(&ping.hist, 0.99),
        ops_per_s: round3(ping.rounds.spread().median),
    }
}

fn rows(measured: &[Measured], nodes: usize) -> Vec<UncontendedRow> {
    let find = |w: Impl| measured.iter().find(|m| m.which == w).map(|m| &m.rounds);
    let floor = find(Impl::Floor);
    let rs = find(Impl::Rslock);
    measured
        .iter()
        .map(|m| {
            let sp = m.rounds.spread();
            UncontendedRow {
                impl_: m.which.name().to_string(),
                wait: m.which.wait().to_string(),
                nodes,
                cycles_per_s: round3(sp.median),
                cycles_per_s_min: round3(sp.min),
                cycles_per_s_max: round3(sp.max),
                p50_us: quantile_us(&m.hist, 0.5),
                p99_us: quantile_us(&m.hist, 0.99),
                p999_us: quantile_us(&m.hist, 0.999),
                vs_floor: floor.and_then(|f| m.rounds.ratio_to(f)).map(round3),
                vs_rslock: rs.and_then(|r| m.rounds.ratio_to(r)).map(round3),
            }
        })
        .collect()
}

fn targets(r: &Report) -> Vec<TargetRow> {
    let mut t = Vec::new();
    for (placement, rows) in [
        ("split", &r.uncontended),
        ("same-cpu", &r.uncontended_same_cpu),
    ] {
        let best = rows
            .iter()
            .filter(|u| u.nodes == 1 && u.impl_ != "floor" && u.impl_ != "rslock")
            .max_by(|a, b| {
                a.vs_floor
                    .unwrap_or(0.0)
                    .total_cmp(&b.vs_floor.unwrap_or(0.0))
            });
        if let Some(b) = best {
            let m = b.vs_floor.unwrap_or(0.0);
            t.push(TargetRow {
                target: format!(
                    "best single-node rung ({}) cycles/s ÷ floor, {placement}",
                    b.impl_
                ),
                measured: m,
                goal: "≥ 0.95".to_string(),
                met: m >= 0.95,
            });
        }
    }
    if let Some(rl) = r
        .uncontended
        .iter()
        .find(|u| u.impl_ == "redlock" && u.nodes == 5)
    {
        let f = rl.vs_floor.unwrap_or(0.0);
        let s = rl.vs_rslock.unwrap_or(0.0);
        t.push(TargetRow {
            target: "redlock, 5 masters: cycles/s ÷ 5-node floor".to_string(),
            measured: f,
            goal: "≥ 0.95".to_string(),
            met: f >= 0.95,
        });
        t.push(TargetRow {
            target: "redlock, 5 masters: cycles/s ÷ rslock (5 nodes)".to_string(),
            measured: s,
            goal: "≥ 1.0".to_string(),
            met: s >= 1.0,
        });
    }
    let at16 = |name: &str, wait: &str| {
        r.contention
            .iter()
            .find(|c| c.impl_ == name && c.wait == wait && c.workers == 16 && c.keys == 1)
    };
    if let (Some(n), Some(rs)) = (
        at16("lua-release", "notify"),
        at16("rslock", "rslock-default"),
    ) {
        let ratio = n.wait_p999_us as f64 / (rs.wait_p999_us.max(1) as f64);
        t.push(TargetRow {
            target: format!(
                "16 workers, one key: p99.9 wait lua-release+notify ÷ rslock ({} µs vs {} µs)",
                n.wait_p999_us, rs.wait_p999_us
            ),
            measured: ratio,
            goal: "≤ 0.1".to_string(),
            met: ratio <= 0.1,
        });
        let acq = n.vs_rslock.unwrap_or(0.0);
        t.push(TargetRow {
            target: "16 workers, one key: acq/s lua-release+notify ÷ rslock".to_string(),
            measured: acq,
            goal: "≥ 0.8".to_string(),
            met: acq >= 0.8,
        });
        t.push(TargetRow {
            target: "16 workers, one key: fairness (fewest/most) of lua-release+notify".to_string(),
            measured: n.fairness,
            goal: "≥ 0.7".to_string(),
            met: n.fairness >= 0.7,
        });
    }
    t
}
