//! Values as this server keeps them: integers, strings and NULL.
//! `DATETIME` columns hold MariaDB's text form (`2027-01-15 08:00:00`),
//! which orders as the times do, so comparisons need nothing more.

use std::cmp::Ordering;

/// One value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    /// NULL
    Null,
    /// An integer.
    Int(i64),
    /// A string (and a datetime, in its text form).
    Str(String),
}

impl Value {
    /// The value as the text protocol sends it (`None` for NULL).
    pub fn text(&self) -> Option<String> {
        match self {
            Value::Null => None,
            Value::Int(i) => Some(i.to_string()),
            Value::Str(s) => Some(s.clone()),
        }
    }

    /// MySQL's comparison: NULL with anything is unknown (`None`); an
    /// integer with a string compares the string's number.
    pub(crate) fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Null, _) | (_, Value::Null) => None,
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
            (Value::Int(a), Value::Str(b)) => Some(a.cmp(&leading_int(b))),
            (Value::Str(a), Value::Int(b)) => Some(leading_int(a).cmp(b)),
        }
    }

    /// Whether the value counts as true in a WHERE (NULL does not).
    pub(crate) fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Int(i) => *i != 0,
            Value::Str(s) => leading_int(s) != 0,
        }
    }

    /// The value as an integer, as MySQL reads a string's leading digits.
    pub(crate) fn as_int(&self) -> Option<i64> {
        match self {
            Value::Null => None,
            Value::Int(i) => Some(*i),
            Value::Str(s) => Some(leading_int(s)),
        }
    }
}

/// A string's leading integer, 0 if it has none.
fn leading_int(s: &str) -> i64 {
    let t = s.trim_start();
    let end = t
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(t.len(), |(i, _)| i);
    t[..end].parse().unwrap_or(0)
}

/// `ms` since the Unix epoch as MariaDB shows a DATETIME.
pub(crate) fn datetime(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_read_as_mariadb_shows_them() {
        assert_eq!(datetime(0), "1970-01-01 00:00:00");
        assert_eq!(datetime(1_800_000_000_000), "2027-01-15 08:00:00");
    }
}
