//! MariaDB's errors: the number, its SQLSTATE and the message, worded as
//! MariaDB 10.11 words it.

/// An error as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MyError {
    /// MariaDB's error number (1064, 1146, ...).
    pub code: u16,
    /// The message.
    pub message: String,
}

impl MyError {
    fn new(code: u16, message: String) -> MyError {
        MyError { code, message }
    }

    /// The SQLSTATE MariaDB sends with this error number (the `mariadb`
    /// client prints it: `ERROR 1064 (42000)`), from MariaDB's own table
    /// for the numbers this server gives.
    pub fn sql_state(&self) -> &'static str {
        match self.code {
            1064 | 1065 | 1305 | 1582 => "42000",
            1146 | 1051 => "42S02",
            1050 => "42S01",
            1054 => "42S22",
            1046 => "3D000",
            1048 | 1062 => "23000",
            1136 => "21S01",
            _ => "HY000",
        }
    }

    /// 1064 (42000): the statement does not parse; `near` is the text from
    /// where reading stopped.
    pub(crate) fn syntax(near: &str) -> MyError {
        // MariaDB quotes at most 80 bytes of what follows.
        let mut end = near.len().min(80);
        while !near.is_char_boundary(end) {
            end -= 1;
        }
        MyError::new(
            1064,
            format!(
                "You have an error in your SQL syntax; check the manual that corresponds \
                 to your MariaDB server version for the right syntax to use near '{}' at line 1",
                &near[..end]
            ),
        )
    }

    /// 1305 (42000): no such function, named with the current database.
    pub(crate) fn no_function(database: Option<&str>, name: &str) -> MyError {
        let name = match database {
            Some(db) => format!("{db}.{name}"),
            None => name.to_owned(),
        };
        MyError::new(1305, format!("FUNCTION {name} does not exist"))
    }

    /// 1146 (42S02)
    pub(crate) fn no_table(database: &str, table: &str) -> MyError {
        MyError::new(1146, format!("Table '{database}.{table}' doesn't exist"))
    }

    /// 1046 (3D000)
    pub(crate) fn no_database() -> MyError {
        MyError::new(1046, "No database selected".into())
    }

    /// 1050 (42S01)
    pub(crate) fn table_exists(table: &str) -> MyError {
        MyError::new(1050, format!("Table '{table}' already exists"))
    }

    /// 1054 (42S22)
    pub(crate) fn no_column(column: &str, clause: &str) -> MyError {
        MyError::new(1054, format!("Unknown column '{column}' in '{clause}'"))
    }

    /// 1062 (23000)
    pub(crate) fn duplicate(value: &str, key: &str) -> MyError {
        MyError::new(1062, format!("Duplicate entry '{value}' for key '{key}'"))
    }

    /// 1048 (23000)
    pub(crate) fn null_column(column: &str) -> MyError {
        MyError::new(1048, format!("Column '{column}' cannot be null"))
    }

    /// 1136 (21S01)
    pub(crate) fn value_count() -> MyError {
        MyError::new(
            1136,
            "Column count doesn't match value count at row 1".into(),
        )
    }

    /// 1582 (42000)
    pub(crate) fn param_count(name: &str) -> MyError {
        MyError::new(
            1582,
            format!("Incorrect parameter count in the call to native function '{name}'"),
        )
    }

    /// 1205 (HY000): a row lock waited `innodb_lock_wait_timeout`.
    pub(crate) fn lock_wait_timeout() -> MyError {
        MyError::new(
            1205,
            "Lock wait timeout exceeded; try restarting transaction".into(),
        )
    }
}

impl MyError {
    /// 1364 (HY000): a NOT NULL column without a value (strict mode).
    pub(crate) fn no_default(column: &str) -> MyError {
        MyError::new(
            1364,
            format!("Field '{column}' doesn't have a default value"),
        )
    }

    /// 1065 (42000)
    pub(crate) fn empty_query() -> MyError {
        MyError::new(1065, "Query was empty".into())
    }

    /// 1295 (HY000): prepared statements are not served.
    pub(crate) fn unsupported_ps() -> MyError {
        MyError::new(
            1295,
            "This command is not supported in the prepared statement protocol yet".into(),
        )
    }
}

impl MyError {
    /// 1146 for a table of database `db`.
    pub(crate) fn new_unknown_table(db: &str, table: &str) -> MyError {
        MyError::no_table(db, table)
    }

    /// 1051 (42S02): DROP TABLE of a missing table.
    pub(crate) fn unknown_table(db: &str, table: &str) -> MyError {
        MyError::new(1051, format!("Unknown table '{db}.{table}'"))
    }

    /// 1096 (HY000): `SELECT *` without a table.
    pub(crate) fn no_tables_used() -> MyError {
        MyError::new(1096, "No tables used".into())
    }
}
