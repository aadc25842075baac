//! The HTML reports opened in a real browser: Debian's `chromium`,
//! headless, installed by `scripts/setup`. Each kind of page (a run, a
//! suite, a search, a benchmark) is loaded; the test reads the DOM after
//! the page's scripts ran (`--dump-dom`) and the browser's log
//! (`--enable-logging=stderr`), and requires:
//!
//! - no script error: each page's own `window.onerror` handler writes
//!   `#script-errors` into the DOM, none is there, the page's last script
//!   marked it `data-ready="yes"`, and the log has no console message;
//! - the elements a reader needs: lanes, the witness ringed and listed,
//!   the matrix, the found case, the tables and plots;
//! - every link resolves: an anchor to an element of the page, a file
//!   link to a file that exists (and its anchor, if any, in that file);
//! - on a run page, the timeline's own self-test (`#selftest`: zoom
//!   widens a span and redraws the axis, hovering shows an event in full).
//!
//! Each page's screenshot is kept under `target/tmp/html-reports/`.
//! Without chromium the test fails and says to run `scripts/setup`.

use crate::common;

use common::{locklab, locklab_line, locklab_out, path, root, scratch, stderr};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one browser run may take before it is killed.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// The browser, or a failure that says how to install it.
fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if let Some(p) = found.filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
    }
    panic!(
        "chromium is not installed, and these tests open the HTML reports in it: run \
         scripts/setup (it installs Debian's chromium package), then the tests again"
    );
}

/// What one headless browser run gave.
struct Loaded {
    /// `--dump-dom`: the DOM after the page's scripts ran.
    dom: String,
    /// The browser's log.
    log: String,
}

/// Runs chromium headless on `page` (with `fragment`, e.g. `#selftest`)
/// with `extra` arguments, in its own process group, killed (the group it
/// started, by its id) when it outlives [`BROWSER_TIMEOUT`].
fn browse(page: &Path, fragment: &str, extra: &[String], work: &Path) -> Loaded {
    use std::os::unix::process::CommandExt as _;
    let url = format!("file://{}{fragment}", page.display());
    let profile = work.join("chromium-profile");
    std::fs::create_dir_all(&profile).unwrap();
    let out_file = work.join("browser.out");
    let log_file = work.join("browser.log");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(extra)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::fs::File::create(&log_file).unwrap())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > BROWSER_TIMEOUT {
            // The group is the browser and the helpers it started.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            panic!("chromium did not finish {url} within {BROWSER_TIMEOUT:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(&log_file).unwrap_or_default();
    assert!(
        status.success(),
        "chromium failed on {url}: {status}\n{log}"
    );
    Loaded {
        dom: std::fs::read_to_string(&out_file).unwrap_or_default(),
        log,
    }
}

/// Where the screenshots are kept.
fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-reports");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The values of `name="..."` attributes in `html`, in order.
fn attribute_values(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    let mut values = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        values.push(decode_entities(&rest[..end]));
        rest = &rest[end..];
    }
    values
}

/// The few entities an attribute value of these pages can hold.
fn decode_entities(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// `%XX` sequences decoded.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k] == b'%'
            && k + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&text[k + 1..k + 3], 16)
        {
            out.push(b);
            k += 3;
        } else {
            out.push(bytes[k]);
            k += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Loads `page` in the browser, checks that its scripts ran without error
/// and that every link resolves, saves its screenshot as `<shot>.png`,
/// and returns its DOM.
fn open_page(page: &Path, shot: &str) -> String {
    assert!(page.is_file(), "no page at {}", page.display());
    let work = scratch(&format!("browser-{shot}"));
    let loaded = browse(page, "", &["--dump-dom".to_string()], &work);
    let dom = loaded.dom;
    assert!(
        dom.contains("data-ready=\"yes\""),
        "{}: the page's scripts did not run to the end:\n{}",
        page.display(),
        &dom[..dom.len().min(2000)]
    );
    assert!(
        !dom.contains("id=\"script-errors\""),
        "{}: script errors: {}",
        page.display(),
        dom.split("id=\"script-errors\"").nth(1).unwrap_or("")
    );
    let console: Vec<&str> = loaded
        .log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(
        console.is_empty(),
        "{}: console messages: {console:#?}",
        page.display()
    );
    check_links(page, &dom);

    // Taken into this process's own folder, checked there, then kept
    // under the shared screenshots folder: two test processes at once
    // (`scripts/soak -j`) never read each other's half-written picture.
    let png = work.join(format!("{shot}.png"));
    let _ = std::fs::remove_file(&png);
    browse(
        page,
        "",
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1400,1800".to_string(),
            "--hide-scrollbars".to_string(),
        ],
        &work,
    );
    let bytes = std::fs::read(&png).unwrap_or_default();
    assert!(
        bytes.len() > 10_000 && bytes.starts_with(b"\x89PNG"),
        "no screenshot of {} at {}",
        page.display(),
        png.display()
    );
    let kept = screenshots().join(format!("{shot}.png"));
    let _ = std::fs::copy(&png, &kept);
    dom
}

/// Every `href` of `dom` resolves: `#id` to an element of the page, a
/// relative path to a file (and its `#id`, if any, to an element there).
fn check_links(page: &Path, dom: &str) {
    let ids: BTreeSet<String> = attribute_values(dom, "id").into_iter().collect();
    for link in attribute_values(dom, "href") {
        assert!(
            !link.contains("://"),
            "{}: a link leaves the report: {link}",
            page.display()
        );
        if let Some(anchor) = link.strip_prefix('#') {
            assert!(
                ids.contains(anchor),
                "{}: link {link} has no target",
                page.display()
            );
            continue;
        }
        let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
        let target = page.parent().unwrap().join(percent_decode(file));
        assert!(
            target.is_file(),
            "{}: link {link} names no file ({})",
            page.display(),
            target.display()
        );
        if !anchor.is_empty() {
            let there = std::fs::read_to_string(&target).unwrap();
            assert!(
                there.contains(&format!("id=\"{anchor}\"")),
                "{}: link {link}: no such anchor there",
                page.display()
            );
        }
    }
}

/// The checks every run page passes: a lane per client and node, the
/// witness ringed on the timeline, listed and marked in the history, and
/// the timeline's self-test.
fn check_run_page(page: &Path, dom: &str, shot: &str) {
    for lane in ["lane-faults", "lane-client-0", "lane-store"] {
        assert!(
            dom.contains(&format!("id=\"{lane}\"")),
            "{}: no {lane}",
            page.display()
        );
    }
    assert!(
        dom.contains("id=\"lane-redis-0\""),
        "{}: no node lane",
        page.display()
    );
    assert!(
        dom.contains("class=\"hold\""),
        "{}: no holds drawn",
        page.display()
    );
    assert!(
        dom.contains("<circle class=\"witness\""),
        "{}: witness not ringed",
        page.display()
    );
    assert!(dom.contains("<tr id=\"ev-") && dom.contains("class=\"witness\"><td"));
    assert!(dom.contains("class=\"witness-events\""));
    assert!(
        dom.contains("locklab replay "),
        "{}: no replay command",
        page.display()
    );
    let work = scratch(&format!("browser-{shot}-selftest"));
    let selftest = browse(page, "#selftest", &["--dump-dom".to_string()], &work);
    assert!(
        selftest.dom.contains("data-selftest=\"pass\""),
        "{}: the timeline's self-test did not pass: {}",
        page.display(),
        attribute_values(&selftest.dom, "data-selftest").join(" ")
    );
}

#[test]
fn a_run_page_shows_lanes_the_witness_and_escapes_the_scenario_text() {
    let dir = scratch("html-run");
    let text = std::fs::read_to_string(root().join("scenarios/pause-at-release-mid.toml")).unwrap();
    // Markup in the scenario's description and comments must show as text.
    let hostile = "</pre><script>document.title='pwned'</script><b>bold</b>";
    let edited = text.replacen(
        "description = \"\"\"\n",
        &format!("# {hostile}\ndescription = \"\"\"\n{hostile} "),
        1,
    );
    assert_ne!(edited, text);
    let file = dir.join("pause-at-release-mid.toml");
    std::fs::write(&file, &edited).unwrap();
    let out = locklab_line(&format!(
        "run {} --rung get-check-del --seed 1 --out {}",
        path(&file),
        path(&dir.join("reports"))
    ));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let page = dir.join("reports/runs/pause-at-release-mid/get-check-del/1/report.html");
    let dom = open_page(&page, "run");
    check_run_page(&page, &dom, "run");
    assert!(
        dom.contains("<title>pause-at-release-mid / get-check-del / seed 1: violated</title>"),
        "the scenario's script ran and changed the title"
    );
    assert!(!dom.contains("<script>document.title"));
    assert!(!dom.contains("<b>bold</b>"));
    assert!(dom.contains("&lt;script&gt;document.title="));
}

#[test]
fn a_suite_page_links_every_cell_to_its_run_page() {
    let dir = scratch("html-suite");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    for name in ["pause-at-release-mid", "crash-in-critical-section"] {
        std::fs::copy(
            root().join(format!("scenarios/{name}.toml")),
            scenarios.join(format!("{name}.toml")),
        )
        .unwrap();
    }
    let reports = dir.join("reports");
    let out = locklab_line(&format!(
        "suite --scenarios {} --out {}",
        path(&scenarios),
        path(&reports)
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let matrix = report::matrix::from_json(
        &std::fs::read_to_string(reports.join("safety-matrix.json")).unwrap(),
    )
    .unwrap();
    let page = reports.join("report.html");
    let dom = open_page(&page, "suite");
    assert!(dom.contains("id=\"matrix\""));
    let cell_links: Vec<String> = attribute_values(&dom, "href")
        .into_iter()
        .filter(|l| l.starts_with("runs/"))
        .collect();
    for cell in &matrix {
        let link = format!(
            "runs/{}/{}/{}/report.html",
            cell.scenario, cell.rung, cell.seed
        );
        assert!(cell_links.contains(&link), "no link for {link}");
    }
    for section in ["ladder", "rules"] {
        assert!(dom.contains(&format!("id=\"{section}\"")), "no {section}");
    }
    // A violated cell's run page, written by the suite, has its witness
    // and replays byte for byte.
    let violated = matrix
        .iter()
        .find(|c| c.verdict == model::verdict::Verdict::Violated)
        .expect("a violated cell");
    let run_dir = reports.join(format!(
        "runs/{}/{}/{}",
        violated.scenario, violated.rung, violated.seed
    ));
    let run_page = run_dir.join("report.html");
    let dom = open_page(&run_page, "suite-run");
    check_run_page(&run_page, &dom, "suite-run");
    let replay = locklab(&["replay", path(&run_dir)]);
    assert_eq!(replay.status.code(), Some(0), "{}", common::stdout(&replay));
}

#[test]
fn an_explore_page_links_its_counterexample_to_its_run_page() {
    let (out, reports) = locklab_out(
        "explore --rung set-nx-px --cases 40 --jobs 2",
        "html-explore",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let page = reports.join("explore-set-nx-px.html");
    let dom = open_page(&page, "explore");
    assert!(dom.contains("id=\"found-cases\""));
    let run_link = attribute_values(&dom, "href")
        .into_iter()
        .find(|l| l.starts_with("runs/"))
        .expect("a link to the found case's run page");
    let run_page = reports.join(percent_decode(&run_link));
    let dom = open_page(&run_page, "explore-run");
    check_run_page(&run_page, &dom, "explore-run");
}

#[test]
fn the_bench_page_is_built_from_the_stored_bench_json() {
    let dir = scratch("html-bench");
    let stored = root().join("reports");
    std::fs::copy(stored.join("bench.json"), dir.join("bench.json")).unwrap();
    let plots: Vec<(&str, &str)> = bench::write::PLOTS
        .iter()
        .map(|p| (p.file, p.what))
        .collect();
    for (file, _) in &plots {
        std::fs::copy(stored.join(file), dir.join(file)).unwrap();
    }
    let page = bench::page::write_page(&dir, "bench", &plots).unwrap();
    let dom = open_page(&page, "bench");
    for section in [
        "targets",
        "machine",
        "placement",
        "uncontended",
        "contention",
        "plots",
    ] {
        assert!(
            dom.contains(&format!("id=\"{section}\"")),
            "no {section} section"
        );
    }
    assert_eq!(
        dom.matches("<img alt=").count(),
        plots.len(),
        "every plot embedded"
    );
}

#[test]
fn a_check_page_draws_a_foreign_history_with_its_witness_ringed() {
    let dir = scratch("html-check");
    let file = root().join("interchange/tests/histories/owner-mutex-invalid.edn");
    let out = locklab_line(&format!(
        "check {} --out {}",
        path(&file),
        path(&dir.join("reports"))
    ));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let checks = dir.join("reports/checks");
    let folder = std::fs::read_dir(&checks)
        .unwrap()
        .next()
        .expect("the check's folder")
        .unwrap()
        .path();
    let page = folder.join("report.html");
    let dom = open_page(&page, "check");
    for lane in ["lane-client-0", "lane-client-1"] {
        assert!(dom.contains(&format!("id=\"{lane}\"")), "no {lane}");
    }
    assert!(dom.contains("class=\"hold\""), "no holds drawn");
    assert!(
        dom.contains("<circle class=\"witness\""),
        "witness not ringed"
    );
    assert!(dom.contains("class=\"witness-events\""));
    assert!(dom.contains("owner-mutex"));
}
