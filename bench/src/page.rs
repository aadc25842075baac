//! The bench page, `bench.html` beside `bench.md`: made from `bench.json`
//! alone (and the plot files beside it), so a stored report can be shown
//! again without measuring anything.
//!
//! The page follows the document: the targets first, then every other
//! section in the order `bench.json` has it (machine, placement, versions,
//! settings, the tables of figures, ...). Arrays of objects become tables
//! whose columns are the objects' fields in the order they first appear; a
//! figure with an interval (`median`, `low`, `high`) reads `m [low–high]`.
//! Being driven by the document, the page shows the fields of older and
//! newer reports alike. The plots are embedded as images (data URIs), so
//! the file stands alone and nothing in a plot file can run as script.

use ::report::html::{attr, page, text};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt::{self, Write as _};

/// A JSON value that keeps the order of an object's fields as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as written.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, its fields in document order.
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// Builds a [`Json`] from any self-describing input.
struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut fields = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            fields.push((key, value));
        }
        Ok(Json::Object(fields))
    }
}

impl Json {
    /// A field of an object.
    pub fn get(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A number's value.
    fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// Whether it is a figure with an interval: `median`, `low`, `high`.
    fn is_estimate(&self) -> bool {
        ["median", "low", "high"]
            .iter()
            .all(|k| self.get(k).and_then(Json::as_f64).is_some())
    }
}

/// A plot of the report, read from its folder by the caller.
#[derive(Debug, Clone, Copy)]
pub struct BenchPlot<'a> {
    /// Its file name beside `bench.json`.
    pub file: &'a str,
    /// What it shows, in words.
    pub what: &'a str,
    /// The SVG text, `None` when the file is not there.
    pub svg: Option<&'a str>,
}

/// Standard base64 (RFC 4648, with padding), for data URIs.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A section's heading: known sections by name, others by their field.
fn heading(field: &str) -> String {
    let known = match field {
        "targets" => "Targets",
        "machine" => "Machine",
        "placement" => "Placement",
        "versions" => "Versions",
        "settings" => "Settings",
        "method" => "How the targets were measured",
        "noise" => "What the machine was doing",
        "uncontended" => {
            "Uncontended: acquire + release back to back (client and servers on different CPUs)"
        }
        "uncontended_same_cpu" => "Uncontended, client and node 0 on one CPU",
        "simulated_node" => {
            "Uncontended on locklab's simulated node over TCP, not redis-server (no server here answers DELEX/DELIFEQ)"
        }
        "contention" => "Contention: many tasks of one client",
        "etcd" => "etcd beside Redis: the etcd rungs on a real etcd member",
        "zookeeper" => "ZooKeeper beside Redis: the ZooKeeper rungs on a real ZooKeeper server",
        "postgres" => "PostgreSQL beside Redis: the PostgreSQL rungs on a real PostgreSQL server",
        "mysql" => "MariaDB beside Redis: mysql-get-lock on a real MariaDB server",
        "raw_rtt" => "Raw round trip (PING, node 0)",
        "inventory" => "The inventory sale under load",
        "watchdog" => "The watchdog on long critical sections",
        "comparisons" => "Every pair the targets were read from",
        "touched" => "What the run touched",
        _ => "",
    };
    if known.is_empty() {
        let mut name = field.replace('_', " ");
        if let Some(first) = name.get(..1) {
            name = first.to_uppercase() + &name[1..];
        }
        name
    } else {
        known.to_string()
    }
}

/// A scalar or a figure with its interval, as text.
fn scalar(value: &Json) -> Option<String> {
    match value {
        Json::Null => Some("–".to_string()),
        Json::Bool(b) => Some(if *b { "yes" } else { "no" }.to_string()),
        Json::Number(n) if n.is_f64() => Some(n.as_f64().map(figure).unwrap_or_default()),
        Json::Number(n) => Some(n.to_string()),
        Json::String(s) => Some(s.clone()),
        Json::Array(items) if items.iter().all(scalar_only) => Some(
            items
                .iter()
                .filter_map(scalar)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        v if v.is_estimate() => {
            let f = |k: &str| {
                v.get(k)
                    .map(|x| scalar(x).unwrap_or_default())
                    .unwrap_or_default()
            };
            Some(format!("{} [{}–{}]", f("median"), f("low"), f("high")))
        }
        _ => None,
    }
}

/// A measured figure to three significant digits (whole numbers from 100
/// on), trailing zeros dropped: `0.0233`, `1.77`, `3970`.
fn figure(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let magnitude = if x == 0.0 {
        0
    } else {
        x.abs().log10().floor() as i32
    };
    let decimals = (2 - magnitude).clamp(0, 6) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Whether a value is shown as one line of text.
fn scalar_only(value: &Json) -> bool {
    matches!(
        value,
        Json::Null | Json::Bool(_) | Json::Number(_) | Json::String(_)
    ) || value.is_estimate()
}

/// Arrays longer than this are folded.
const FOLD_ROWS: usize = 40;

/// Renders any value: text, a table of an array of objects, a table of
/// an object's fields.
fn render(out: &mut String, value: &Json) {
    if let Some(line) = scalar(value) {
        out.push_str(&text(&line));
        return;
    }
    match value {
        Json::Array(items) => {
            let fold = items.len() > FOLD_ROWS;
            if fold {
                let _ = write!(out, "<details><summary>{} rows</summary>", items.len());
            }
            let mut columns: Vec<&str> = Vec::new();
            for item in items {
                if let Json::Object(fields) = item {
                    for (k, _) in fields {
                        if !columns.contains(&k.as_str()) {
                            columns.push(k);
                        }
                    }
                }
            }
            out.push_str("<table><tr>");
            for c in &columns {
                let _ = write!(out, "<th>{}</th>", text(c));
            }
            out.push_str("</tr>\n");
            for item in items {
                out.push_str("<tr>");
                match item {
                    Json::Object(_) => {
                        for c in &columns {
                            let cell = item.get(c).unwrap_or(&Json::Null);
                            let class = if matches!(cell, Json::Number(_)) || cell.is_estimate() {
                                " class=\"num\""
                            } else {
                                ""
                            };
                            let _ = write!(out, "<td{class}>");
                            render(out, cell);
                            out.push_str("</td>");
                        }
                    }
                    other => {
                        let _ = write!(out, "<td colspan=\"{}\">", columns.len().max(1));
                        render(out, other);
                        out.push_str("</td>");
                    }
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</table>");
            if fold {
                out.push_str("</details>");
            }
        }
        Json::Object(fields) => {
            out.push_str("<table class=\"kv\">");
            for (k, v) in fields {
                let _ = write!(out, "<tr><th>{}</th><td>", text(k));
                render(out, v);
                out.push_str("</td></tr>");
            }
            out.push_str("</table>");
        }
        // Scalars were rendered above.
        _ => {}
    }
}

/// The bench page of `bench.json`'s text; `plots` are the plot files found
/// beside it. An error says what in the JSON could not be read.
pub fn bench_page(json: &str, plots: &[BenchPlot<'_>]) -> Result<String, String> {
    let doc: Json = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let Json::Object(fields) = &doc else {
        return Err("expected an object at the top".to_string());
    };
    let partial = doc.get("partial").filter(|p| **p != Json::Null);
    let title = if partial.is_some() {
        "locklab bench (partial)"
    } else {
        "locklab bench"
    };
    let mut body = String::new();
    let _ = writeln!(body, "<header>\n<h1>{title}</h1>");
    let mut lede = String::from(
        "Every rung against real redis-server, beside the floor (a hand-written <code>SET NX PX</code> + <code>EVALSHA</code> release) and rslock; <code>native-cad</code>, which no server here can release, on locklab's simulated node; the etcd rungs on a real etcd member, the ZooKeeper rungs on a real ZooKeeper server and the database rungs on real PostgreSQL and MariaDB servers, beside Redis.",
    );
    if let Some(machine) = doc.get("machine") {
        let field = |k: &str| machine.get(k).and_then(scalar).unwrap_or_default();
        let _ = write!(
            lede,
            " Measured on {} ({} CPUs, {} MiB, Linux {}).",
            text(&field("cpu_model")),
            text(&field("cpus")),
            text(&field("memory_mib")),
            text(&field("kernel"))
        );
    }
    let _ = writeln!(body, "<p class=\"lede\">{lede}</p>");
    if let Some(p) = partial {
        body.push_str("<div class=\"partial\"><strong>Partial:</strong> the run was stopped before its end; this is what it measured until then.");
        render(&mut body, p);
        body.push_str("</div>\n");
    }
    let mut order: Vec<&(String, Json)> = fields.iter().filter(|(k, _)| k == "targets").collect();
    order.extend(
        fields
            .iter()
            .filter(|(k, _)| k != "targets" && k != "partial"),
    );
    body.push_str("<nav>");
    for (field, _) in &order {
        let _ = write!(
            body,
            "<a href=\"#{}\">{}</a>",
            attr(field),
            text(&heading(field))
        );
    }
    body.push_str("<a href=\"#plots\">Plots</a></nav>\n</header>\n");
    for (field, value) in order {
        let _ = writeln!(
            body,
            "<section id=\"{}\">\n<h2>{}</h2>",
            attr(field),
            text(&heading(field))
        );
        render(&mut body, value);
        body.push_str("\n</section>\n");
    }
    body.push_str("<section id=\"plots\" class=\"plots\">\n<h2>Plots</h2>\n");
    for plot in plots {
        match plot.svg {
            Some(svg) => {
                let _ = writeln!(
                    body,
                    "<figure><img alt=\"{}\" src=\"data:image/svg+xml;base64,{}\"><figcaption>{} (<code>{}</code>)</figcaption></figure>",
                    attr(plot.what),
                    base64(svg.as_bytes()),
                    text(plot.what),
                    text(plot.file)
                );
            }
            None => {
                let _ = writeln!(
                    body,
                    "<p class=\"muted\">{} (<code>{}</code>): not found beside bench.json.</p>",
                    text(plot.what),
                    text(plot.file)
                );
            }
        }
    }
    body.push_str("</section>\n");
    Ok(page(title, &body, ""))
}

/// Writes `<stem>.html` beside `<stem>.json` in `dir` (`bench.html` from
/// `bench.json`), embedding those of `plots` (file name, what it shows)
/// that are in `dir`; returns the page's path. The error names the file
/// that could not be read or written.
pub fn write_page(
    dir: &std::path::Path,
    stem: &str,
    plots: &[(&str, &str)],
) -> Result<std::path::PathBuf, String> {
    let json_path = dir.join(format!("{stem}.json"));
    let json =
        std::fs::read_to_string(&json_path).map_err(|e| format!("{}: {e}", json_path.display()))?;
    let svgs: Vec<Option<String>> = plots
        .iter()
        .map(|(file, _)| std::fs::read_to_string(dir.join(file)).ok())
        .collect();
    let shown: Vec<BenchPlot<'_>> = plots
        .iter()
        .zip(&svgs)
        .map(|((file, what), svg)| BenchPlot {
            file,
            what,
            svg: svg.as_deref(),
        })
        .collect();
    let html = bench_page(&json, &shown).map_err(|e| format!("{}: {e}", json_path.display()))?;
    let page_path = dir.join(format!("{stem}.html"));
    harness::atomic::write_whole(&page_path, &html)
        .map_err(|e| format!("{}: {e}", page_path.display()))?;
    Ok(page_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_examples() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn fields_keep_their_document_order() {
        let doc: Json = serde_json::from_str(r#"{"z":1,"a":[{"impl":"floor","x":2}]}"#).unwrap();
        let Json::Object(fields) = &doc else { panic!() };
        assert_eq!(fields[0].0, "z");
        assert_eq!(fields[1].0, "a");
    }

    #[test]
    fn a_table_has_a_column_per_field_and_intervals_read_as_figures() {
        let json = r#"{"targets":[{"what":"a <b>","ratio":{"median":1.0,"low":0.9,"high":1.1,"n":3},"met":true}],"machine":{"cpus":2}}"#;
        let html = bench_page(json, &[]).unwrap();
        assert!(html.contains("<th>what</th><th>ratio</th><th>met</th>"));
        assert!(html.contains("1 [0.9–1.1]"));
        assert!(html.contains("a &lt;b&gt;"));
        assert!(html.find("id=\"targets\"") < html.find("id=\"machine\""));
    }

    #[test]
    fn figures_show_three_significant_digits() {
        assert_eq!(figure(0.023_271_824), "0.0233");
        assert_eq!(figure(1.77), "1.77");
        assert_eq!(figure(3970.0), "3970");
        assert_eq!(figure(0.995), "0.995");
        assert_eq!(figure(0.0), "0");
    }

    #[test]
    fn what_is_not_a_report_is_refused_with_a_reason() {
        assert!(
            bench_page("[1]", &[])
                .unwrap_err()
                .contains("expected an object")
        );
        assert!(bench_page("{", &[]).unwrap_err().contains("not JSON"));
    }
}
