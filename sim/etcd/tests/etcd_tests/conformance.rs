//! The conformance suite: one list of `etcdctl` command lines
//! (`tests/conformance/cases.txt`), run against a real etcd 3.4.23 member
//! (started by `harness`) and against the simulated member on a real TCP
//! port; each line's output must be the same.
//!
//! Both members start empty and get the same lines in the same order, so
//! revisions agree. What is random by nature is masked in both outputs
//! before they are compared: lease IDs (numbered in order of first
//! appearance, also inside lock keys), the cluster and member IDs in JSON headers, and etcdctl's
//! own log lines on standard error. A line prefixed with `?` is compared
//! with its digits masked (a TTL read while real time passes).

use harness::etcd::{ETCDCTL_BIN, EtcdServer};
use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;

const CASES: &str = include_str!("conformance/cases.txt");

/// One line of the cases file.
#[derive(Debug, Clone)]
enum Step {
    /// `etcdctl ARGS`, with what to feed its standard input.
    Run {
        args: Vec<String>,
        stdin: String,
        masked: bool,
    },
    /// `!lease NAME TTL`: grant a lease and remember its ID as `$NAME`.
    Lease { name: String, ttl_s: u64 },
    /// `!sleep MS`.
    Sleep(u64),
    /// `!watch ARGS`: start `etcdctl watch ARGS` in the background.
    Watch(Vec<String>),
    /// `!endwatch`: stop it and compare what it printed.
    EndWatch,
}

#[derive(Debug, Clone)]
struct Line {
    case: String,
    number: usize,
    text: String,
    step: Step,
}

/// Splits a line like a shell would: words, and double-quoted strings
/// (with `\"` inside) as one word.
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            '\\' if quoted => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// `txn| COMPARES | SUCCESS | FAILURE`, each part's lines split by ` ; `:
/// the standard input of `etcdctl txn`.
fn txn_stdin(spec: &str) -> Result<String, String> {
    let parts: Vec<&str> = spec.split('|').collect();
    if parts.len() != 3 {
        return Err(format!(
            "`txn|` needs three parts split by `|`, found {}",
            parts.len()
        ));
    }
    let mut stdin = String::new();
    for part in parts {
        for line in part.split(" ; ").map(str::trim).filter(|l| !l.is_empty()) {
            stdin.push_str(line);
            stdin.push('\n');
        }
        stdin.push('\n');
    }
    Ok(stdin)
}

fn parse(text: &str) -> Result<Vec<Line>, String> {
    let mut case = String::new();
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let t = raw.trim();
        if let Some(name) = t.strip_prefix("## ") {
            case = name.to_string();
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let at = |e: String| format!("cases.txt line {number}: {e}");
        let (masked, body) = match t.strip_prefix('?') {
            Some(rest) => (true, rest.trim()),
            None => (false, t),
        };
        let step = if let Some(spec) = body.strip_prefix("txn|") {
            Step::Run {
                args: vec!["txn".into()],
                stdin: txn_stdin(spec).map_err(at)?,
                masked,
            }
        } else if let Some(rest) = body.strip_prefix('!') {
            let words = split_words(rest);
            match words.first().map(String::as_str) {
                Some("lease") if words.len() == 3 => Step::Lease {
                    name: words[1].clone(),
                    ttl_s: words[2]
                        .parse()
                        .map_err(|_| at(format!("`{}` is no TTL in seconds", words[2])))?,
                },
                Some("sleep") if words.len() == 2 => Step::Sleep(
                    words[1]
                        .parse()
                        .map_err(|_| at(format!("`{}` is no number of ms", words[1])))?,
                ),
                Some("watch") => Step::Watch(words[1..].to_vec()),
                Some("endwatch") => Step::EndWatch,
                _ => return Err(at(format!("unknown directive `{body}`"))),
            }
        } else {
            Step::Run {
                args: split_words(body),
                stdin: String::new(),
                masked,
            }
        };
        if case.is_empty() {
            return Err(at("a line before the first `## case`".into()));
        }
        lines.push(Line {
            case: case.clone(),
            number,
            text: t.to_string(),
            step,
        });
    }
    Ok(lines)
}

/// One member as the suite drives it: its address, its leases by name,
/// and the lease IDs it has shown, for masking.
struct Arm {
    addr: SocketAddr,
    leases: BTreeMap<String, String>,
    seen_ids: Vec<String>,
    /// A background `etcdctl watch` and what it has printed so far.
    watch: Option<(Child, Arc<Mutex<String>>)>,
}

impl Arm {
    fn new(addr: SocketAddr) -> Arm {
        Arm {
            addr,
            leases: BTreeMap::new(),
            seen_ids: Vec::new(),
            watch: None,
        }
    }

    fn command(&self, args: &[String]) -> Command {
        let mut c = Command::new(ETCDCTL_BIN);
        c.arg("--endpoints")
            .arg(self.addr.to_string())
            .arg("--command-timeout=5s");
        for a in args {
            let mut a = a.clone();
            for (name, id) in &self.leases {
                a = a.replace(&format!("${name}"), id);
            }
            c.arg(a);
        }
        c.env("ETCDCTL_API", "3");
        // For commands a line runs under `lock`, to reach the same member.
        c.env("LOCKLAB_ENDPOINT", self.addr.to_string());
        c
    }

    fn run(&mut self, args: &[String], stdin: &str) -> String {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("etcdctl runs");
        if let Some(mut input) = child.stdin.take() {
            use std::io::Write;
            input
                .write_all(stdin.as_bytes())
                .expect("etcdctl reads its input");
        }
        let out = child.wait_with_output().expect("etcdctl ends");
        let text = format!(
            "{}{}exit {}",
            String::from_utf8_lossy(&out.stdout),
            without_logs(&String::from_utf8_lossy(&out.stderr)),
            out.status.code().unwrap_or(-1)
        );
        self.mask(&text)
    }

    fn step(&mut self, step: &Step) -> Option<String> {
        match step {
            Step::Run {
                args,
                stdin,
                masked,
            } => {
                let out = self.run(args, stdin);
                Some(if *masked {
                    out.replace(|c: char| c.is_ascii_digit(), "#")
                } else {
                    out
                })
            }
            Step::Lease { name, ttl_s } => {
                let out = self.run(&["lease".into(), "grant".into(), ttl_s.to_string()], "");
                let raw = self.run_raw_last_id();
                self.leases.insert(name.clone(), raw);
                Some(out)
            }
            Step::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(*ms));
                None
            }
            Step::Watch(args) => {
                let mut all = vec!["watch".to_string()];
                all.extend(args.iter().cloned());
                // A watch pinned to the next revision sees the same events
                // however long etcdctl takes to start.
                if !args.iter().any(|a| a.starts_with("--rev")) {
                    all.push(format!("--rev={}", self.revision() + 1));
                }
                let mut child = self
                    .command(&all)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("etcdctl watch runs");
                let printed = Arc::new(Mutex::new(String::new()));
                if let Some(mut out) = child.stdout.take() {
                    let printed = printed.clone();
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = out.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                            printed.lock().unwrap().push_str(&text);
                        }
                    });
                }
                self.watch = Some((child, printed));
                None
            }
            Step::EndWatch => {
                let (mut child, printed) = self.watch.take().expect("`!endwatch` after `!watch`");
                // Done once the output has stood still for a while (or
                // after a bound): the events come whenever etcdctl is up.
                let mut last = String::new();
                let mut still_since = std::time::Instant::now();
                let started = std::time::Instant::now();
                while started.elapsed() < Duration::from_secs(10) {
                    std::thread::sleep(Duration::from_millis(100));
                    let now = printed.lock().unwrap().clone();
                    if now != last {
                        last = now;
                        still_since = std::time::Instant::now();
                    } else if !last.is_empty()
                        && still_since.elapsed() >= Duration::from_millis(700)
                    {
                        break;
                    }
                }
                let _ = child.kill();
                let _ = child.wait();
                let out = printed.lock().unwrap().clone();
                Some(self.mask(&out))
            }
        }
    }

    /// The member's current revision.
    fn revision(&mut self) -> i64 {
        let out = self
            .command(&[
                "get".to_string(),
                "revision-probe".to_string(),
                "-w".to_string(),
                "json".to_string(),
            ])
            .output()
            .expect("etcdctl get runs");
        let text = String::from_utf8_lossy(&out.stdout);
        text.split("\"revision\":")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|d| d.parse().ok())
            .expect("a revision in the header")
    }

    /// The raw ID of the lease granted last (the last one masked).
    fn run_raw_last_id(&self) -> String {
        self.seen_ids.last().cloned().unwrap_or_default()
    }

    /// Masks lease IDs (16 hex digits) by their order of first sight, and
    /// the cluster and member IDs of JSON headers.
    fn mask(&mut self, text: &str) -> String {
        let mut out = String::new();
        for word in split_keep(text) {
            // etcdctl prints lease IDs with `%016x`, lock keys with `%x`:
            // 13 to 16 hex digits, one number either way.
            let is_id =
                (13..=16).contains(&word.len()) && word.chars().all(|c| c.is_ascii_hexdigit());
            if let Some(id) = is_id.then(|| u64::from_str_radix(&word, 16).ok()).flatten() {
                let id = format!("{id:016x}");
                let k = match self.seen_ids.iter().position(|s| *s == id) {
                    Some(k) => k,
                    None => {
                        self.seen_ids.push(id);
                        self.seen_ids.len() - 1
                    }
                };
                out.push_str(&format!("<lease{k}>"));
            } else {
                out.push_str(&word);
            }
        }
        let out = mask_json_ids(&out);
        self.mask_decimal_leases(&out)
    }

    /// JSON output shows lease IDs in decimal: mask them as their hex
    /// form is masked.
    fn mask_decimal_leases(&mut self, text: &str) -> String {
        let mut result = String::new();
        let mut rest = text;
        while let Some(i) = rest.find("\"lease\":").or_else(|| rest.find("\"ID\":")) {
            let field_end = i + rest[i..].find(':').unwrap_or(0) + 1;
            result.push_str(&rest[..field_end]);
            rest = &rest[field_end..];
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            rest = &rest[digits.len()..];
            match digits.parse::<i64>() {
                Ok(id) if id != 0 => {
                    let masked = self.mask(&format!("{id:016x}"));
                    result.push_str(&masked);
                }
                _ => result.push_str(&digits),
            }
        }
        result.push_str(rest);
        result
    }
}

impl Drop for Arm {
    fn drop(&mut self) {
        if let Some((mut c, _)) = self.watch.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Splits text into runs of alphanumerics and runs of everything else.
fn split_keep(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in text.chars() {
        let alnum = c.is_ascii_alphanumeric();
        match out.last_mut() {
            Some(w)
                if w.chars()
                    .next()
                    .is_some_and(|f| f.is_ascii_alphanumeric() == alnum) =>
            {
                w.push(c)
            }
            _ => out.push(c.to_string()),
        }
    }
    out
}

fn mask_json_ids(text: &str) -> String {
    let mut out = text.to_string();
    for field in ["\"cluster_id\":", "\"member_id\":"] {
        let mut result = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(field) {
            result.push_str(&rest[..i + field.len()]);
            rest = rest[i + field.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
            result.push('N');
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// etcdctl's standard error without its JSON log lines (they carry times
/// and random client names).
fn without_logs(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("{\"level\""))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn the_cases_file_parses_and_holds_at_least_sixty_lines() {
    let lines = parse(CASES).unwrap();
    let commands = lines
        .iter()
        .filter(|l| !matches!(l.step, Step::Sleep(_)))
        .count();
    assert!(commands >= 60, "only {commands} lines");
}

#[test]
fn etcdctl_prints_the_same_against_real_etcd_and_the_simulated_member() {
    let lines = parse(CASES).unwrap();
    let real = match EtcdServer::start() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("real etcd unavailable ({e}); skipping: scripts/setup installs it");
            return;
        }
    };
    let mut real_arm = Arm::new(real.addr());
    let mut sim_arm = Arm::new(common::start_simulated());
    let mut differences = Vec::new();
    for line in &lines {
        let a = real_arm.step(&line.step);
        let b = sim_arm.step(&line.step);
        if std::env::var_os("LOCKLAB_CONFORMANCE_SHOW").is_some() {
            println!(
                "[{}] {}\n{}",
                line.case,
                line.text,
                b.clone().unwrap_or_default()
            );
        }
        if a != b {
            differences.push(format!(
                "[{}] line {}: {}\n  real etcd: {:?}\n  simulated: {:?}",
                line.case, line.number, line.text, a, b
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} lines differ:\n{}",
        differences.len(),
        lines.len(),
        differences.join("\n")
    );
}
