//! A tiny `locklab bench` run (millisecond slices, one round) into a
//! temporary folder: the report, the plots and every section and field of
//! `bench.json` are there. The full benchmark never runs in tests.

use serde_json::Value;

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn has_all(row: &Value, fields: &[&str], what: &str) {
    for f in fields {
        assert!(row.get(f).is_some(), "{what} row lacks {f:?}: {row}");
    }
}

#[test]
fn a_tiny_run_writes_the_report_plots_and_json() {
    let out = std::env::temp_dir().join(format!("locklab-bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let report = bench::run(bench::BenchOptions {
        quick: true,
        out: out.clone(),
        // Tests share the CPUs with other tests: do not pin.
        pin: false,
        slice_ms: Some(10),
        rounds: Some(1),
        // A few rounds of pairs: enough to reach every comparison.
        target_budget: Some(std::time::Duration::from_secs(4)),
        ..Default::default()
    })
    .expect("a tiny run completes");
    assert!(!report.figures.uncontended.is_empty());
    for f in [
        "bench.md",
        "bench.json",
        "bench-latency-cdf.svg",
        "bench-throughput.svg",
        "bench-wait-p999.svg",
        "bench-redlock-scaling.svg",
    ] {
        let p = out.join(f);
        assert!(p.exists(), "{f} not written");
    }
    // Axis labels are drawn (the font was found).
    let svg = std::fs::read_to_string(out.join("bench-throughput.svg")).unwrap();
    assert!(
        svg.contains("<text") && svg.contains("workers"),
        "no axis labels"
    );

    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    for k in [
        "machine",
        "placement",
        "versions",
        "uncontended",
        "contention",
        "raw_rtt",
        "inventory",
        "watchdog",
        "targets",
        "comparisons",
        "method",
        "noise",
        "touched",
    ] {
        assert!(
            json.get(k).is_some(),
            "bench.json lacks {k}: {:?}",
            keys(&json)
        );
    }
    let arr = |k: &str| {
        json[k]
            .as_array()
            .unwrap_or_else(|| panic!("{k} not an array"))
    };
    assert!(json["partial"].is_null(), "a complete run is not partial");
    for row in arr("uncontended") {
        has_all(
            row,
            &[
                "impl",
                "nodes",
                "round_trips",
                "cycles_per_s",
                "cycles_per_s_interval",
                "bound_per_s",
                "p50_us",
                "p99_us",
                "p999_us",
                "vs_floor",
                "anomaly",
            ],
            "uncontended",
        );
    }
    // Every target has a verdict; every comparison it reads was measured
    // in pairs (the split and five-node ones need no pinning).
    for row in arr("targets") {
        has_all(
            row,
            &["target", "estimate", "goal", "verdict", "reason"],
            "target",
        );
    }
    let measured: Vec<&str> = arr("comparisons")
        .iter()
        .filter(|c| !c["pairs"].as_array().unwrap().is_empty())
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(
        measured.contains(&"set-nx-px/floor split") && measured.contains(&"redlock/rslock 5 nodes"),
        "{measured:?}"
    );
    let estimate = &arr("targets")[0]["estimate"];
    has_all(
        estimate,
        &["median", "low", "high", "n", "interval"],
        "estimate",
    );
    has_all(
        &json["noise"],
        &["reference", "phases", "load_average", "summary"],
        "noise",
    );
    assert!(!arr("raw_rtt").is_empty() && json["raw_rtt"][0]["modes"].is_object());
    for row in arr("contention") {
        has_all(
            row,
            &[
                "impl",
                "nodes",
                "workers",
                "keys",
                "acq_per_s",
                "wait_p50_us",
                "wait_p99_us",
                "wait_p999_us",
                "wait_max_us",
                "wait_lower_bounds",
                "waits_open",
                "fairness",
                "starved_workers",
            ],
            "contention",
        );
        // How many starve depends on the machine; that they are among the
        // workers does not.
        let starved = row["starved_workers"].as_u64().unwrap();
        assert!(starved <= row["workers"].as_u64().unwrap(), "{row}");
    }
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    assert!(
        md.contains("| starved |") && md.contains("right-censored"),
        "bench.md does not show the starved workers and the censoring"
    );
    assert!(
        md.contains("**Method.**") && md.contains("What the machine was doing"),
        "bench.md does not explain the method and the noise"
    );
    assert!(!out.join("bench-partial.json").exists());
    for row in arr("raw_rtt") {
        has_all(row, &["placement", "rtt_p50_us", "ops_per_s"], "raw_rtt");
    }
    for row in arr("inventory") {
        has_all(row, &["impl", "sales_per_s", "oversold"], "inventory");
    }
    for row in arr("watchdog") {
        has_all(row, &["cs_ms", "renewals", "cycles_per_s"], "watchdog");
    }
    let impls: Vec<&str> = arr("uncontended")
        .iter()
        .filter_map(|r| r["impl"].as_str())
        .collect();
    for want in ["floor", "rslock", "lua-release", "redlock"] {
        assert!(impls.contains(&want), "no {want} row");
    }
    every_library_rung_has_a_row_that_ran(&json, &md);
    the_etcd_rows_ran_or_say_why_not(&json, &md);
    // Whatever excludes never oversells on real Redis.
    for row in arr("inventory") {
        let name = row["impl"].as_str().unwrap();
        if locks::rung(name).is_none_or(|r| r.excludes) {
            assert_eq!(row["oversold"], 0, "{name} oversold");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Each library rung has a row with a positive rate: on redis-server
/// beside the floor and rslock (the `rslock` rung, as `rslock-model`, on
/// one node and beside the crate on 3 and 5), and `native-cad` on the
/// simulated node beside the floor and `lua-release` there, labelled so.
fn every_library_rung_has_a_row_that_ran(json: &Value, md: &str) {
    let ran = |rows: &Value, name: &str, nodes: u64| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["impl"] == name && r["nodes"] == nodes)
            .unwrap_or_else(|| panic!("no {name} row on {nodes} node(s): {rows}"))["cycles_per_s"]
            .as_f64()
            .is_some_and(|rate| rate > 0.0)
    };
    let on_redis = &json["uncontended"];
    for name in [
        "redisson",
        "redisson-fair",
        "redisson-rw",
        "redisson-semaphore",
        "redsync",
        "node-redlock",
        "rslock-model",
    ] {
        assert!(ran(on_redis, name, 1), "{name} did not run");
    }
    for nodes in [3, 5] {
        assert!(ran(on_redis, "rslock-model", nodes) && ran(on_redis, "rslock", nodes));
    }
    let simulated = &json["simulated_node"];
    for name in ["native-cad", "floor", "lua-release"] {
        assert!(
            ran(&simulated["uncontended"], name, 1),
            "{name} did not run on the simulated node"
        );
    }
    assert!(
        on_redis
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["impl"] != "native-cad"),
        "native-cad cannot release on redis-server 7.0"
    );
    let note = simulated["note"].as_str().unwrap();
    assert!(note.contains("not redis-server") && note.contains("DELEX/DELIFEQ"));
    assert!(simulated["raw_rtt"]["rtt_p50_us"].as_u64().unwrap() > 0);
    assert!(
        md.contains("Uncontended on locklab's simulated node over TCP, not redis-server")
            && md.contains("| native-cad | fixed | 1 | 2 |")
            && md.contains("| rslock-model | fixed | 1 | 2 |"),
        "bench.md lacks the new rows"
    );
}

/// The etcd section is there: with a row of each etcd rung, uncontended
/// and in the hand-off, when etcd is installed; else saying why not.
fn the_etcd_rows_ran_or_say_why_not(json: &Value, md: &str) {
    let etcd = &json["etcd"];
    assert!(etcd.is_object(), "bench.json lacks the etcd section");
    assert!(
        md.contains("## etcd beside Redis"),
        "bench.md lacks the etcd section"
    );
    if !harness::etcd::installed() {
        assert!(etcd["skipped"].is_string(), "{etcd}");
        assert!(md.contains("Skipped: no etcd member could be started"));
        return;
    }
    assert!(etcd["skipped"].is_null(), "{}", etcd["skipped"]);
    for id in bench::physics::ETCD_ROWS {
        for table in ["uncontended", "handoff"] {
            assert!(
                etcd[table]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["impl"] == id),
                "no {table} row of {id}"
            );
        }
    }
    assert!(json["versions"]["etcd"].is_string(), "no etcd version");
    assert!(json["placement"]["etcd"]["pid"].as_u64().is_some());
}
