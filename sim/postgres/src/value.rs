//! Values and column types: the few PostgreSQL types a lock table uses,
//! with the type oids psql aligns its columns by and the text forms it
//! prints.

/// A column's (or an expression's) type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// `text`
    Text,
    /// `varchar`
    Varchar,
    /// `bigint`
    Int8,
    /// `integer`
    Int4,
    /// `boolean`
    Bool,
    /// `timestamptz`, kept in microseconds since the Unix epoch, UTC.
    Timestamptz,
    /// `void`: what `pg_advisory_lock` returns.
    Void,
}

impl ColumnType {
    /// PostgreSQL's oid for the type.
    pub fn oid(self) -> u32 {
        match self {
            ColumnType::Text => 25,
            ColumnType::Varchar => 1043,
            ColumnType::Int8 => 20,
            ColumnType::Int4 => 23,
            ColumnType::Bool => 16,
            ColumnType::Timestamptz => 1184,
            ColumnType::Void => 2278,
        }
    }

    /// The type's `typlen`: negative for variable width.
    pub fn size(self) -> i16 {
        match self {
            ColumnType::Text | ColumnType::Varchar => -1,
            ColumnType::Int8 | ColumnType::Timestamptz => 8,
            ColumnType::Int4 | ColumnType::Void => 4,
            ColumnType::Bool => 1,
        }
    }

    /// The type's name in error messages.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Text => "text",
            ColumnType::Varchar => "character varying",
            ColumnType::Int8 => "bigint",
            ColumnType::Int4 => "integer",
            ColumnType::Bool => "boolean",
            ColumnType::Timestamptz => "timestamp with time zone",
            ColumnType::Void => "void",
        }
    }
}

/// A value in a row or a result.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// Any integer type.
    Int(i64),
    /// A timestamp, microseconds since the Unix epoch (UTC).
    Timestamp(i64),
    /// Text.
    Text(String),
    /// `void`, shown empty.
    Void,
}

impl Value {
    /// The text form PostgreSQL sends, `None` for NULL.
    pub fn to_text(&self) -> Option<String> {
        match self {
            Value::Null => None,
            Value::Bool(b) => Some(if *b { "t" } else { "f" }.to_string()),
            Value::Int(n) => Some(n.to_string()),
            Value::Text(s) => Some(s.clone()),
            Value::Timestamp(us) => Some(timestamp_text(*us)),
            Value::Void => Some(String::new()),
        }
    }
}

/// `2026-11-27 21:23:36.5+00`: PostgreSQL's ISO form in UTC, with the
/// fraction's trailing zeros dropped.
pub fn timestamp_text(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    if frac != 0 {
        let f = format!("{frac:06}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out.push_str("+00");
    out
}

/// Parses `YYYY-MM-DD[ HH:MM:SS[.f]][+00]` (UTC only) to microseconds.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let text = text.trim().trim_end_matches("+00").trim_end_matches('Z');
    let (date, time) = text.split_once([' ', 'T']).unwrap_or((text, "00:00:00"));
    let mut ymd = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut parts = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, mi, s) = (
        parts.next()??,
        parts.next()??,
        parts.next().unwrap_or(Some(0))?,
    );
    let frac_us = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<6}").get(..6)?.parse::<i64>().ok()?
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let secs = days_from_civil(y, m, d) * 86_400 + h * 3600 + mi * 60 + s;
    Some(secs * 1_000_000 + frac_us)
}

/// Howard Hinnant's days-from-civil, proleptic Gregorian.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}
