//! `locklab explore` through the binary: it finds, shrinks, writes and
//! names a replayable counterexample; the JSON summary; exit codes.

use crate::common;

use common::{document, locklab, locklab_line, locklab_out, path, scratch};

#[test]
fn explore_finds_writes_and_replays_a_counterexample() {
    let (out, _) = locklab_out("explore --rung set-nx-px --cases 40 --json", "found");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let doc = document(&out);
    assert_eq!(doc["exit_code"], 1);
    let summary = &doc["result"];
    assert_eq!(summary["variant"], "set-nx-px");
    assert_eq!(summary["cases"], 40);
    assert!(summary["violations"].as_u64().unwrap() > 0);
    assert!(summary["cases_per_s"].as_f64().unwrap() > 0.0);
    assert!(summary["sim_s_per_wall_s"].as_f64().unwrap() > 0.0);
    let replay = summary["first"]["replay"]
        .as_str()
        .expect("a replay command");
    assert!(
        stderr.contains(replay),
        "the replay command is printed (on standard error, with --json)"
    );
    // The replay command, run as printed, gives the same verdict.
    let args: Vec<&str> = replay.split_whitespace().skip(1).collect();
    assert!(std::path::Path::new(args[1]).exists(), "{replay}");
    let mut run_args = args.clone();
    let runs = scratch("runs");
    run_args.extend(["--out", path(&runs)]);
    let again = locklab(&run_args);
    assert_eq!(
        again.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("set-nx-px: violated"));
}

#[test]
fn every_counterexample_is_listed_by_seed_in_case_order_whatever_the_workers() {
    let listed = |jobs: u32| {
        let (out, _) = locklab_out(
            &format!("explore --rung setnx --cases 60 --seed 5 --no-shrink --jobs {jobs} --json"),
            &format!("listed-{jobs}"),
        );
        document(&out)["result"].clone()
    };
    let one = listed(1);
    let two = listed(2);
    let found = one["counterexamples"].as_array().expect("a list");
    let total = one["violations"].as_u64().unwrap() + one["deadlocks"].as_u64().unwrap();
    assert!(total > 1, "{one}");
    assert_eq!(found.len() as u64, total);
    assert_eq!(one["counterexamples"], two["counterexamples"]);
    let seeds: Vec<u64> = found.iter().map(|c| c["seed"].as_u64().unwrap()).collect();
    assert!(seeds.windows(2).all(|w| w[0] < w[1]), "{seeds:?}");
    let first = &one["first"];
    assert!(
        found
            .iter()
            .any(|c| c["seed"] == first["seed"] && c["verdict"] == first["verdict"]),
        "{first}"
    );
}

#[test]
fn explore_within_assumptions_finds_nothing_and_exits_0() {
    let (out, _) = locklab_out(
        "explore --rung fenced --faults assumed --cases 20 --shard 1/3 --json",
        "none",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let summary = &document(&out)["result"];
    assert!(summary["first"].is_null());
    assert_eq!(summary["shard"], "1/3");
}

#[test]
fn a_search_within_assumptions_runs_on_the_services_own_deployments_and_names_what_could_not_run() {
    // The etcd, ZooKeeper and database rungs have written assumptions and
    // are searched on their own deployments: no case is an error.
    for rung in [
        "etcd-mutex",
        "zk-recipe",
        "pg-advisory",
        "mysql-get-lock",
        "native-cad",
    ] {
        let out = locklab_line(&format!(
            "explore --rung {rung} --faults assumed --cases 6 --no-shrink --jobs 1 --json --out target/explore-services"
        ));
        let summary = &document(&out)["result"];
        assert_eq!(summary["errors"], 0, "{rung}: {summary}");
        assert!(summary.get("first_error").is_none(), "{rung}: {summary}");
    }
}

#[test]
fn explore_rejects_bad_input_with_exit_3() {
    for line in [
        "explore --rung nope",
        "explore --rung setnx --shard 2/2",
        "explore --rung setnx --time ten",
        "explore --rung setnx --faults pause,bogus",
        "explore --rung setnx --cases x",
        "explore --rung setnx --cases 5 --time 5s",
    ] {
        let out = locklab_line(line);
        assert_eq!(out.status.code(), Some(3), "{line}");
    }
}

#[test]
fn a_search_whose_seeds_run_out_says_so() {
    let (out, _) = locklab_out(
        "explore --rung setnx --seed 9007199254740990 --cases 10 --no-shrink --jobs 1 --json",
        "exhausted",
    );
    let summary = &document(&out)["result"];
    assert_eq!(summary["cases"], 2, "only two seeds are left below 2^53");
    assert_eq!(summary["seeds_exhausted"], true);
    assert!(String::from_utf8_lossy(&out.stderr).contains("the seeds ran out"));
}
