//! `INFO [section ...]`: Redis 7.0.15's sections, in its order, and the
//! counters behind them ([`Stats`]).
//!
//! What the node can know is real: clients, commands processed, calls,
//! rejected and failed calls per command, error replies per error code,
//! pub/sub counts, keys, the replication state, the port. What a
//! simulation has no counterpart for is plausible and deterministic:
//! memory sizes are Redis's start-up footprint plus a fixed amount per key,
//! CPU times and uptime are 0, process id 1, and counters of things the
//! node never does (forks, evictions, defragmentation) are 0.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::handle::Role;
use crate::node::Node;
use crate::resp::Reply;

/// The sections `INFO` (or `INFO default`) prints, in Redis's order.
const DEFAULT: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// Every section `INFO all` and `INFO everything` print, in Redis's order.
const ALL: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// Redis's memory footprint right after start-up (`used_memory_startup`);
/// the node reports it plus [`BYTES_PER_KEY`] for each key.
const STARTUP_MEMORY: usize = 876_240;
/// What each key adds to `used_memory` in the node's estimate.
const BYTES_PER_KEY: usize = 64;

/// One command's counters (`cmdstat_<name>`).
#[derive(Default, Clone, Copy)]
pub(crate) struct CommandStat {
    /// Times it ran.
    calls: u64,
    /// Times it was refused before running (arity, `READONLY`...).
    rejected: u64,
    /// Times it ran and answered an error.
    failed: u64,
}

/// The node's counters, as `INFO stats`, `commandstats` and `errorstats`
/// print them.
#[derive(Default)]
pub(crate) struct Stats {
    /// Commands run (`total_commands_processed`).
    processed: u64,
    /// Error replies sent (`total_error_replies`).
    errors: u64,
    /// Counters by command (`get`, `client|id`).
    commands: BTreeMap<&'static str, CommandStat>,
    /// Error replies by error code (`ERR`, `WRONGTYPE`).
    codes: BTreeMap<String, u64>,
}

impl Stats {
    /// Counts a command that ran, and its error reply if it failed.
    pub(crate) fn ran(&mut self, name: &'static str, reply: Option<&Reply>) {
        self.processed += 1;
        let stat = self.commands.entry(name).or_default();
        stat.calls += 1;
        if let Some(Reply::Error(text)) = reply {
            stat.failed += 1;
            self.error(text);
        }
    }

    /// Counts the error reply a blocked `name` got after it ran (`CLIENT
    /// UNBLOCK ... ERROR`): the call failed after all.
    pub(crate) fn failed_while_blocked(&mut self, name: &'static str, text: &str) {
        self.commands.entry(name).or_default().failed += 1;
        self.error(text);
    }

    /// Counts a command refused before it ran (`name` when it resolved
    /// to a known command) and the error it got.
    pub(crate) fn rejected(&mut self, name: Option<&'static str>, reply: &Reply) {
        if let Some(name) = name {
            self.commands.entry(name).or_default().rejected += 1;
        }
        if let Reply::Error(text) = reply {
            self.error(text);
        }
    }

    /// Counts one error reply under its code (its first word).
    fn error(&mut self, text: &str) {
        self.errors += 1;
        let code = text.split(' ').next().unwrap_or_default();
        *self.codes.entry(code.to_string()).or_default() += 1;
    }
}

/// `INFO [section ...]`: a verbatim string (a bulk string in RESP2).
pub(crate) fn info(node: &Node, a: &[Vec<u8>]) -> Reply {
    Reply::Verbatim(info_text(node, &a[1..]).into_bytes())
}

/// Which sections the arguments ask for, in print order.
fn wanted(args: &[Vec<u8>]) -> Vec<&'static str> {
    if args.is_empty() {
        return DEFAULT.to_vec();
    }
    let names: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let has = |s: &str| names.iter().any(|n| n == s);
    ALL.iter()
        .copied()
        .filter(|s| {
            has(s) || has("all") || has("everything") || (has("default") && DEFAULT.contains(s))
        })
        .collect()
}

/// The text of the sections `args` ask for, separated by blank lines.
fn info_text(node: &Node, args: &[Vec<u8>]) -> String {
    wanted(args)
        .into_iter()
        .map(|s| section(node, s))
        .collect::<Vec<_>>()
        .join("\r\n")
}

/// One section's text, its heading included.
fn section(node: &Node, name: &str) -> String {
    let st = node.state.borrow();
    let mut out = String::new();
    let w = &mut out;
    match name {
        "server" => {
            let now_us = node.handle.now_us();
            let port = node.handle.config().port;
            let _ = write!(
                w,
                "# Server\r\n{}redis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:Linux simulated\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:12.2.0\r\nprocess_id:1\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{port}\r\nserver_time_usec:{now_us}\r\nuptime_in_seconds:0\r\nuptime_in_days:0\r\nhz:10\r\nconfigured_hz:10\r\nlru_clock:{}\r\nexecutable:\r\nconfig_file:\r\nio_threads_active:0\r\n",
                node.handle.config().version.info_lines(),
                st.replid,
                (now_us / 1_000_000) & ((1 << 24) - 1)
            );
        }
        "clients" => {
            let _ = write!(
                w,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:10000\r\nclient_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\nblocked_clients:{}\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n",
                st.connected.len(),
                node.blocked_clients()
            );
        }
        "memory" => {
            let used = used_memory(&st);
            let maxmemory = st.config.maxmemory_bytes();
            let policy = st.config.value("maxmemory-policy");
            let _ = write!(
                w,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{used}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{used}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:100.00%\r\nused_memory_overhead:{STARTUP_MEMORY}\r\nused_memory_startup:{STARTUP_MEMORY}\r\nused_memory_dataset:{}\r\nused_memory_dataset_perc:100.00%\r\nused_memory_lua:32768\r\nused_memory_vm_eval:32768\r\nused_memory_lua_human:32.00K\r\nused_memory_scripts_eval:0\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\nmaxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{policy}\r\nmem_fragmentation_ratio:1.00\r\nmem_fragmentation_bytes:0\r\nmem_not_counted_for_evict:0\r\nmem_replication_backlog:0\r\nmem_clients_slaves:0\r\nmem_clients_normal:0\r\nmem_aof_buffer:0\r\nmem_allocator:libc\r\nactive_defrag_running:0\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n",
                human(used),
                human(used),
                human(used),
                used - STARTUP_MEMORY,
                node.lua.script_count(),
                node.lua.libraries().function_count(),
                node.lua.libraries().libraries.len(),
                human(maxmemory),
            );
        }
        "persistence" => w.push_str("# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:0\r\nrdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:-1\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1\r\naof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\naof_rewrites:0\r\naof_rewrites_consecutive_failures:0\r\naof_last_write_status:ok\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n"),
        "stats" => {
            let s = &st.stats;
            let _ = write!(
                w,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:0\r\ntotal_net_output_bytes:0\r\ninstantaneous_input_kbps:0.00\r\ninstantaneous_output_kbps:0.00\r\nrejected_connections:0\r\nsync_full:0\r\nsync_partial_ok:0\r\nsync_partial_err:0\r\nexpired_keys:0\r\nexpired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\nexpire_cycle_cpu_milliseconds:0\r\nevicted_keys:0\r\nevicted_clients:0\r\ntotal_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\nkeyspace_hits:0\r\nkeyspace_misses:0\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:0\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:0\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:0\r\ntracking_total_items:0\r\ntracking_total_prefixes:0\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\ndump_payload_sanitizations:0\r\ntotal_reads_processed:0\r\ntotal_writes_processed:0\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n",
                st.clients_created(),
                s.processed,
                st.channels.channel_count(),
                st.channels.pattern_count(),
                s.errors
            );
        }
        "replication" => replication(&st, w),
        "cpu" => w.push_str("# CPU\r\nused_cpu_sys:0.000000\r\nused_cpu_user:0.000000\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:0.000000\r\nused_cpu_user_main_thread:0.000000\r\n"),
        "modules" => w.push_str("# Modules\r\n"),
        "commandstats" => {
            w.push_str("# Commandstats\r\n");
            for (name, c) in &st.stats.commands {
                let _ = write!(
                    w,
                    "cmdstat_{name}:calls={},usec=0,usec_per_call=0.00,rejected_calls={},failed_calls={}\r\n",
                    c.calls, c.rejected, c.failed
                );
            }
        }
        "errorstats" => {
            w.push_str("# Errorstats\r\n");
            for (code, n) in &st.stats.codes {
                let _ = write!(w, "errorstat_{code}:count={n}\r\n");
            }
        }
        "latencystats" => {
            w.push_str("# Latencystats\r\n");
            for name in st.stats.commands.keys() {
                let _ = write!(
                    w,
                    "latency_percentiles_usec_{name}:p50=0.001,p99=0.001,p99.9=0.001\r\n"
                );
            }
        }
        "cluster" => w.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
        _ => {
            // "keyspace"
            w.push_str("# Keyspace\r\n");
            for (i, ks) in st.dbs.iter().filter(|(_, ks)| !ks.is_empty()) {
                let _ = write!(
                    w,
                    "db{i}:keys={},expires={},avg_ttl=0\r\n",
                    ks.len(),
                    ks.expires_len()
                );
            }
        }
    }
    out
}

/// The replication section, by role.
fn replication(st: &crate::node::State, w: &mut String) {
    w.push_str("# Replication\r\n");
    match &st.role {
        Role::Master => {
            w.push_str("role:master\r\n");
            let _ = write!(w, "connected_slaves:{}\r\n", st.replicas.len());
            for (i, l) in st.replicas.values().enumerate() {
                let _ = write!(
                    w,
                    "slave{i}:ip={},port=6379,state=online,offset={},lag=0\r\n",
                    l.addr, l.ack
                );
            }
            w.push_str("master_failover_state:no-failover\r\n");
        }
        Role::Replica(m) => {
            w.push_str("role:slave\r\n");
            let _ = write!(w, "master_host:{}\r\nmaster_port:{}\r\n", m.host, m.port);
            let _ = write!(
                w,
                "master_link_status:{}\r\n",
                if st.link_up { "up" } else { "down" }
            );
            let _ = write!(
                w,
                "slave_repl_offset:{}\r\nslave_read_only:1\r\nconnected_slaves:0\r\n",
                st.offset
            );
        }
    }
    let _ = write!(
        w,
        "master_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n",
        st.replid, st.offset
    );
}

/// The node's estimate of its used memory (`used_memory`): Redis's at
/// start, and so much per key.
pub(crate) fn used_memory(st: &crate::node::State) -> usize {
    let keys: usize = st.dbs.iter().map(|(_, ks)| ks.len()).sum();
    STARTUP_MEMORY + BYTES_PER_KEY * keys
}

/// Redis's `bytesToHuman`: `B`, `K`, `M`, `G` with two decimals.
fn human(n: usize) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{n}B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.2}K", n / 1024.0)
    } else if n < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", n / (1024.0 * 1024.0))
    } else {
        format!("{:.2}G", n / (1024.0 * 1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::wanted;

    #[test]
    fn sections_follow_redis_order_whatever_the_arguments_order() {
        let args = |s: &[&str]| s.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(wanted(&args(&["KEYSPACE", "cpu"])), vec!["cpu", "keyspace"]);
        assert!(!wanted(&args(&[])).contains(&"commandstats"));
        assert!(wanted(&args(&["cpu", "all"])).contains(&"commandstats"));
        assert!(wanted(&args(&["sentinel"])).is_empty());
    }
}
