//! Self-contained HTML reports: a page per run ([`run_page`]), per suite
//! ([`suite_page`]), per search ([`explore_page`]) and per history judged
//! by `locklab check` ([`check_page`]), and the pieces every
//! page shares ([`page`], [`text`], [`attr`], ...), which the benchmark's
//! page (the `bench` crate's) uses too.
//!
//! Every page is one file that works on its own: its style and its few
//! lines of plain JavaScript are inline, it loads nothing from the network
//! and needs no font beyond the browser's own. The timeline of a run page
//! is SVG drawn here, on the server side, so it shows without JavaScript
//! too; the script only adds zoom and hover. Every page is a pure function
//! of its data (no time stamps, no machine names beyond those in the data),
//! so the same run gives the same bytes. Everything that comes from input
//! (scenario text, names, error messages) is escaped.
//!
//! Each page's script installs a `window.onerror` handler first: an error
//! in any later script is written into the page (`#script-errors`), and a
//! page whose scripts all ran marks its root element `data-ready="yes"`,
//! so that a headless browser's `--dump-dom` shows both.

pub mod check;
pub mod explore;
pub mod lanes;
pub mod run;
pub mod suite;
mod timeline;

pub use check::check_page;
pub use explore::explore_page;
pub use run::run_page;
pub use suite::suite_page;

use std::fmt::Write as _;

/// The page's style, shared by every kind of page.
const STYLE: &str = include_str!("style.css");

/// The script every page runs first: the error marker.
const ONERROR_SCRIPT: &str = include_str!("onerror.js");

/// The script that marks a page ready, run last.
const READY_SCRIPT: &str = "document.documentElement.setAttribute('data-ready', 'yes');\n";

/// Text made safe for HTML element content: `&`, `<`, `>`, quotes escaped,
/// control characters other than tab and newline replaced (the same rules
/// as the JUnit report's XML).
pub fn text(s: &str) -> String {
    crate::junit::escape_text(s)
}

/// Text made safe for a double-quoted HTML attribute value (line ends as
/// character references, so that a tooltip keeps them).
pub fn attr(s: &str) -> String {
    crate::junit::escape(s)
}

/// A relative link made of path segments, each percent-encoded except
/// for the characters URLs leave as they are (`A-Z a-z 0-9 - _ . ~`), so
/// a scenario or rung name can never break out of its segment.
pub fn href(segments: &[&str]) -> String {
    let mut out = String::new();
    for (k, segment) in segments.iter().enumerate() {
        if k > 0 {
            out.push('/');
        }
        for byte in segment.bytes() {
            if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
                out.push(byte as char);
            } else {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    out
}

/// The link from a page in the report folder to the run page of
/// `scenario` / `rung` / `seed` (see [`crate::output::run_dir`]).
pub fn run_href(scenario: &str, rung: &str, seed: u64) -> String {
    href(&[
        "runs",
        scenario,
        rung,
        &seed.to_string(),
        crate::output::REPORT_FILE,
    ])
}

/// µs as milliseconds for people: `12.345 ms`, `3 ms`.
pub fn ms(us: u64) -> String {
    let whole = format!("{}.{:03}", us / 1000, us % 1000);
    format!("{} ms", whole.trim_end_matches('0').trim_end_matches('.'))
}

/// A verdict as a coloured badge.
pub fn verdict_badge(verdict: model::verdict::Verdict) -> String {
    format!(
        "<span class=\"badge v-{v}\">{v}</span>",
        v = verdict.as_str()
    )
}

/// A whole page: `title` (escaped here), `body` (HTML), then `script`
/// (JavaScript run after the body, inside the error handler's watch).
pub fn page(title: &str, body: &str, script: &str) -> String {
    let mut out = String::with_capacity(body.len() + STYLE.len() + script.len() + 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    // Nothing may come from elsewhere: no network, no other file's script.
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
    );
    let _ = writeln!(out, "<title>{}</title>", text(title));
    let _ = writeln!(out, "<style>\n{STYLE}</style>");
    let _ = writeln!(out, "<script>\n{ONERROR_SCRIPT}</script>");
    out.push_str("</head>\n<body>\n");
    out.push_str(body);
    out.push_str("<script>\n");
    out.push_str(script);
    out.push_str(READY_SCRIPT);
    out.push_str("</script>\n</body>\n</html>\n");
    out
}

/// A table of name / value rows, for settings and figures.
pub fn key_values(rows: &[(String, String)]) -> String {
    let mut out = String::from("<table class=\"kv\">\n");
    for (key, value) in rows {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            text(key),
            text(value)
        );
    }
    out.push_str("</table>\n");
    out
}

/// JSON made safe inside a `<script>` element: `<` never appears, so
/// neither `</script>` nor `<!--` can end or change the element.
pub fn script_json(json: &str) -> String {
    json.replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_names_and_text_is_escaped() {
        assert_eq!(
            text("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&apos;x&apos;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(attr("a\nb\"c"), "a&#10;b&quot;c");
    }

    #[test]
    fn link_segments_are_percent_encoded() {
        assert_eq!(href(&["runs", "a b", "x/y"]), "runs/a%20b/x%2Fy");
        assert_eq!(
            run_href("pause-at-release-mid", "get-check-del", 1),
            "runs/pause-at-release-mid/get-check-del/1/report.html"
        );
    }

    #[test]
    fn json_in_a_script_element_cannot_close_it() {
        assert_eq!(
            script_json("{\"a\":\"</script>\"}"),
            "{\"a\":\"\\u003c/script>\"}"
        );
    }

    #[test]
    fn milliseconds_drop_trailing_zeros() {
        assert_eq!(ms(12_345), "12.345 ms");
        assert_eq!(ms(3_000), "3 ms");
        assert_eq!(ms(1_500), "1.5 ms");
        assert_eq!(ms(0), "0 ms");
    }

    #[test]
    fn a_page_is_whole_and_loads_nothing_from_elsewhere() {
        let html = page("a <title>", "<p>body</p>\n", "var x = 1;\n");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>a &lt;title&gt;</title>"));
        assert!(html.contains("window.onerror"));
        assert!(html.ends_with("</html>\n"));
        for outside in ["src=\"http", "href=\"http", "@import", "url(http"] {
            assert!(!html.contains(outside), "{outside}");
        }
    }
}
