//! The statements served and a small recursive-descent parser for them.
//! A statement that does not parse is MariaDB's error 1064, quoting the
//! text from the token where reading stopped.

use crate::error::MyError;
use crate::table::Type;
use crate::value::Value;

/// A parsed statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// Nothing (an empty query or only a comment).
    Empty,
    /// `BEGIN [WORK]` or `START TRANSACTION`.
    Begin,
    /// `COMMIT [WORK]`
    Commit,
    /// `ROLLBACK [WORK]`
    Rollback,
    /// CREATE TABLE [IF NOT EXISTS]
    CreateTable {
        /// The table.
        table: String,
        /// Whether it may already exist.
        if_not_exists: bool,
        /// (name, type, NOT NULL, PRIMARY/UNIQUE key)
        columns: Vec<ColumnDef>,
    },
    /// DROP TABLE [IF EXISTS]
    DropTable {
        /// The table.
        table: String,
        /// Whether it may be missing.
        if_exists: bool,
    },
    /// `INSERT [IGNORE] INTO t [(columns)] VALUES (...), ...`
    Insert {
        /// The table.
        table: String,
        /// Duplicates skipped rather than failing.
        ignore: bool,
        /// The columns named, or all in order.
        columns: Option<Vec<String>>,
        /// The rows.
        rows: Vec<Vec<Expr>>,
    },
    /// `UPDATE t SET c = e, ... [WHERE]`
    Update {
        /// The table.
        table: String,
        /// Assignments.
        sets: Vec<(String, Expr)>,
        /// The condition.
        filter: Option<Expr>,
    },
    /// `DELETE FROM t [WHERE]`
    Delete {
        /// The table.
        table: String,
        /// The condition.
        filter: Option<Expr>,
    },
    /// `SELECT items [FROM t [WHERE]] [FOR UPDATE]`
    Select {
        /// Each item and its column name (the text as typed, or its alias).
        items: Vec<(Expr, String)>,
        /// The table.
        from: Option<String>,
        /// The condition.
        filter: Option<Expr>,
        /// FOR UPDATE: lock the rows read.
        for_update: bool,
    },
}

/// A column of CREATE TABLE.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub(crate) name: String,
    pub(crate) ty: Type,
    pub(crate) not_null: bool,
    pub(crate) primary: bool,
    pub(crate) unique: bool,
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Value),
    /// A column.
    Col(String),
    /// `*` in a select list.
    Star,
    /// A function call: the name as typed, the arguments.
    Call(String, Vec<Expr>),
    /// A binary operator (`=`, `<>`, `<`, `<=`, `>`, `>=`, `AND`, `OR`,
    /// `+`, `-`).
    Bin(&'static str, Box<Expr>, Box<Expr>),
    /// NOT e
    Not(Box<Expr>),
    /// `e IS [NOT] NULL`
    IsNull(Box<Expr>, bool),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Str(String),
    Int(i64),
    Sym(&'static str),
}

/// Splits `src` into tokens and their byte offsets; `Err(offset)` where a
/// token cannot be read.
fn lex(src: &str) -> Result<Vec<(Tok, usize)>, usize> {
    const SYMS: [&str; 14] = [
        "<=", ">=", "<>", "!=", "(", ")", ",", "=", "<", ">", "*", "+", "-", ";",
    ];
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'#' || (c == b'-' && b.get(i + 1) == Some(&b'-')) {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = src[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
        } else if c == b'\'' || c == b'"' || c == b'`' {
            let mut s = String::new();
            i += 1;
            loop {
                let Some(&d) = b.get(i) else {
                    return Err(start);
                };
                if d == c && b.get(i + 1) == Some(&c) {
                    s.push(c as char);
                    i += 2;
                } else if d == c {
                    i += 1;
                    break;
                } else if d == b'\\' && c != b'`' && i + 1 < b.len() {
                    let e = src[i + 1..].chars().next().unwrap_or(' ');
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        '0' => '\0',
                        _ => e,
                    });
                    i += 1 + e.len_utf8();
                } else {
                    let ch = src[i..].chars().next().unwrap_or(' ');
                    s.push(ch);
                    i += ch.len_utf8();
                }
            }
            out.push((
                if c == b'`' {
                    Tok::Quoted(s)
                } else {
                    Tok::Str(s)
                },
                start,
            ));
        } else if c.is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n = src[start..i].parse().map_err(|_| start)?;
            out.push((Tok::Int(n), start));
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'@' || c >= 0x80 {
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'_'
                    || b[i] == b'$'
                    || b[i] == b'@'
                    || b[i] >= 0x80)
            {
                i += 1;
            }
            out.push((Tok::Word(src[start..i].to_owned()), start));
        } else if c == b'.' {
            out.push((Tok::Sym("."), start));
            i += 1;
        } else {
            let Some(s) = SYMS.iter().find(|s| src[i..].starts_with(**s)) else {
                return Err(start);
            };
            out.push((Tok::Sym(s), start));
            i += s.len();
        }
    }
    Ok(out)
}

/// Parses one statement (a trailing `;` allowed).
pub fn parse(src: &str) -> Result<Stmt, MyError> {
    let toks = lex(src).map_err(|at| MyError::syntax(&src[at..]))?;
    let mut p = Parser {
        src,
        toks,
        at: 0,
        depth: 0,
        ops: 0,
    };
    let stmt = p.statement();
    let stmt = stmt.and_then(|s| {
        p.eat_sym(";");
        if p.at < p.toks.len() { Err(()) } else { Ok(s) }
    });
    stmt.map_err(|()| MyError::syntax(p.rest()))
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<(Tok, usize)>,
    at: usize,
    /// How deeply the expression being read nests.
    depth: usize,
    /// Operators read so far.
    ops: usize,
}

/// The most operators a statement may hold: evaluating and dropping an
/// expression recurse through it, so its size is bounded as its depth is.
const MAX_OPS: usize = 1000;

/// The deepest nesting of expressions read.
const MAX_DEPTH: usize = 200;

type P<T> = Result<T, ()>;

impl Parser<'_> {
    /// The text from the current token on.
    fn rest(&self) -> &str {
        self.toks
            .get(self.at)
            .map_or("", |&(_, off)| &self.src[off..])
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|(t, _)| t)
    }

    fn offset(&self) -> usize {
        self.toks.get(self.at).map_or(self.src.len(), |&(_, o)| o)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(w)) if w.eq_ignore_ascii_case(kw))
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let hit = self.is_kw(kw);
        self.at += usize::from(hit);
        hit
    }

    fn kw(&mut self, kw: &str) -> P<()> {
        if self.eat_kw(kw) { Ok(()) } else { Err(()) }
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        let hit = matches!(self.peek(), Some(Tok::Sym(t)) if *t == s);
        self.at += usize::from(hit);
        hit
    }

    fn sym(&mut self, s: &str) -> P<()> {
        if self.eat_sym(s) { Ok(()) } else { Err(()) }
    }

    fn ident(&mut self) -> P<String> {
        const RESERVED: [&str; 16] = [
            "select", "from", "where", "and", "or", "not", "for", "update", "set", "values",
            "into", "table", "null", "is", "primary", "unique",
        ];
        match self.peek() {
            Some(Tok::Word(w)) if !RESERVED.iter().any(|r| w.eq_ignore_ascii_case(r)) => {
                let w = w.clone();
                self.at += 1;
                Ok(w)
            }
            Some(Tok::Quoted(w)) => {
                let w = w.clone();
                self.at += 1;
                Ok(w)
            }
            _ => Err(()),
        }
    }

    /// A table name, `db.t` taken as `t`.
    fn table(&mut self) -> P<String> {
        let name = self.ident()?;
        if self.eat_sym(".") {
            return self.ident();
        }
        Ok(name)
    }

    fn statement(&mut self) -> P<Stmt> {
        if self.toks.is_empty() {
            return Ok(Stmt::Empty);
        }
        if self.eat_kw("begin") {
            self.eat_kw("work");
            return Ok(Stmt::Begin);
        }
        if self.eat_kw("start") {
            self.kw("transaction")?;
            return Ok(Stmt::Begin);
        }
        if self.eat_kw("commit") {
            self.eat_kw("work");
            return Ok(Stmt::Commit);
        }
        if self.eat_kw("rollback") {
            self.eat_kw("work");
            return Ok(Stmt::Rollback);
        }
        if self.eat_kw("create") {
            return self.create();
        }
        if self.eat_kw("drop") {
            self.kw("table")?;
            let if_exists = self.eat_kw("if");
            if if_exists {
                self.kw("exists")?;
            }
            let table = self.table()?;
            return Ok(Stmt::DropTable { table, if_exists });
        }
        if self.eat_kw("insert") {
            return self.insert();
        }
        if self.eat_kw("update") {
            let table = self.table()?;
            self.kw("set")?;
            let mut sets = Vec::new();
            loop {
                let col = self.ident()?;
                self.sym("=")?;
                sets.push((col, self.expr()?));
                if !self.eat_sym(",") {
                    break;
                }
            }
            let filter = self.filter()?;
            return Ok(Stmt::Update {
                table,
                sets,
                filter,
            });
        }
        if self.eat_kw("delete") {
            self.kw("from")?;
            let table = self.table()?;
            let filter = self.filter()?;
            return Ok(Stmt::Delete { table, filter });
        }
        if self.eat_kw("select") {
            return self.select();
        }
        Err(())
    }

    fn filter(&mut self) -> P<Option<Expr>> {
        if self.eat_kw("where") {
            Ok(Some(self.expr()?))
        } else {
            Ok(None)
        }
    }

    fn create(&mut self) -> P<Stmt> {
        self.kw("table")?;
        let if_not_exists = self.eat_kw("if");
        if if_not_exists {
            self.kw("not")?;
            self.kw("exists")?;
        }
        let table = self.table()?;
        self.sym("(")?;
        let mut columns: Vec<ColumnDef> = Vec::new();
        loop {
            if self.eat_kw("primary") || self.eat_kw("unique") {
                let primary = matches!(self.toks.get(self.at - 1), Some((Tok::Word(w), _)) if w.eq_ignore_ascii_case("primary"));
                if primary {
                    self.kw("key")?;
                } else if !self.eat_kw("key") {
                    self.eat_kw("index");
                }
                self.sym("(")?;
                let name = self.ident()?;
                self.sym(")")?;
                let c = columns
                    .iter_mut()
                    .find(|c| c.name.eq_ignore_ascii_case(&name))
                    .ok_or(())?;
                c.primary |= primary;
                c.unique |= !primary;
            } else {
                columns.push(self.column()?);
            }
            if !self.eat_sym(",") {
                break;
            }
        }
        self.sym(")")?;
        // Table options (ENGINE=InnoDB and the like) change nothing here.
        while self.at < self.toks.len() && !matches!(self.peek(), Some(Tok::Sym(";"))) {
            self.at += 1;
        }
        Ok(Stmt::CreateTable {
            table,
            if_not_exists,
            columns,
        })
    }

    fn column(&mut self) -> P<ColumnDef> {
        let name = self.ident()?;
        let Some(Tok::Word(ty)) = self.peek() else {
            return Err(());
        };
        let ty = match ty.to_ascii_lowercase().as_str() {
            "int" | "integer" | "bigint" | "smallint" | "tinyint" | "mediumint" => Type::Int,
            "varchar" | "char" | "text" | "varbinary" | "binary" => Type::Text,
            "datetime" | "timestamp" => Type::DateTime,
            _ => return Err(()),
        };
        self.at += 1;
        if self.eat_sym("(") {
            let Some(Tok::Int(_)) = self.peek() else {
                return Err(());
            };
            self.at += 1;
            self.sym(")")?;
        }
        self.eat_kw("unsigned");
        let mut def = ColumnDef {
            name,
            ty,
            not_null: false,
            primary: false,
            unique: false,
        };
        loop {
            if self.eat_kw("not") {
                self.kw("null")?;
                def.not_null = true;
            } else if self.eat_kw("null") {
            } else if self.eat_kw("primary") {
                self.kw("key")?;
                def.primary = true;
                def.not_null = true;
            } else if self.eat_kw("unique") {
                self.eat_kw("key");
                def.unique = true;
            } else {
                return Ok(def);
            }
        }
    }

    fn insert(&mut self) -> P<Stmt> {
        let ignore = self.eat_kw("ignore");
        self.kw("into")?;
        let table = self.table()?;
        let mut columns = None;
        if self.eat_sym("(") {
            let mut cols = vec![self.ident()?];
            while self.eat_sym(",") {
                cols.push(self.ident()?);
            }
            self.sym(")")?;
            columns = Some(cols);
        }
        if !self.eat_kw("values") {
            self.kw("value")?;
        }
        let mut rows = Vec::new();
        loop {
            self.sym("(")?;
            let mut row = vec![self.expr()?];
            while self.eat_sym(",") {
                row.push(self.expr()?);
            }
            self.sym(")")?;
            rows.push(row);
            if !self.eat_sym(",") {
                break;
            }
        }
        Ok(Stmt::Insert {
            table,
            ignore,
            columns,
            rows,
        })
    }

    fn select(&mut self) -> P<Stmt> {
        let mut items = Vec::new();
        loop {
            let start = self.offset();
            let e = if self.eat_sym("*") {
                Expr::Star
            } else {
                self.expr()?
            };
            let end = self.toks.get(self.at).map_or(self.src.len(), |&(_, o)| o);
            let mut name = match &e {
                // A string's column is named by its value.
                Expr::Lit(Value::Str(s)) => s.clone(),
                _ => self.src[start..end].trim_end().to_owned(),
            };
            if self.eat_kw("as") || matches!(self.peek(), Some(Tok::Quoted(_) | Tok::Str(_))) {
                name = self.alias()?;
            }
            items.push((e, name));
            if !self.eat_sym(",") {
                break;
            }
        }
        let mut from = None;
        let mut filter = None;
        if self.eat_kw("from") {
            from = Some(self.table()?);
            filter = self.filter()?;
        }
        let for_update = self.eat_kw("for");
        if for_update {
            self.kw("update")?;
        }
        Ok(Stmt::Select {
            items,
            from,
            filter,
            for_update,
        })
    }

    fn alias(&mut self) -> P<String> {
        match self.peek() {
            Some(Tok::Str(s)) => {
                let s = s.clone();
                self.at += 1;
                Ok(s)
            }
            _ => self.ident(),
        }
    }

    fn expr(&mut self) -> P<Expr> {
        // Nesting deeper than any statement needs is refused before it
        // can exhaust the stack.
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(());
        }
        let e = self.or();
        self.depth -= 1;
        e
    }

    fn or(&mut self) -> P<Expr> {
        let mut left = self.and()?;
        while self.eat_kw("or") {
            self.op()?;
            left = Expr::Bin("OR", Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> P<Expr> {
        let mut left = self.not()?;
        while self.eat_kw("and") {
            self.op()?;
            left = Expr::Bin("AND", Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> P<Expr> {
        if self.eat_kw("not") {
            self.op()?;
            return Ok(Expr::Not(Box::new(self.expr_at_depth(Self::not)?)));
        }
        self.comparison()
    }

    /// Counts one more operator.
    fn op(&mut self) -> P<()> {
        self.ops += 1;
        if self.ops > MAX_OPS { Err(()) } else { Ok(()) }
    }

    /// `read` one level deeper.
    fn expr_at_depth(&mut self, read: fn(&mut Self) -> P<Expr>) -> P<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(());
        }
        let e = read(self);
        self.depth -= 1;
        e
    }

    fn comparison(&mut self) -> P<Expr> {
        let left = self.sum()?;
        if self.eat_kw("is") {
            let negated = self.eat_kw("not");
            self.kw("null")?;
            return Ok(Expr::IsNull(Box::new(left), negated));
        }
        for op in ["=", "<>", "!=", "<=", ">=", "<", ">"] {
            if self.eat_sym(op) {
                let op = if op == "!=" { "<>" } else { op };
                let op = ["=", "<>", "<=", ">=", "<", ">"]
                    .into_iter()
                    .find(|o| *o == op)
                    .unwrap_or("=");
                return Ok(Expr::Bin(op, Box::new(left), Box::new(self.sum()?)));
            }
        }
        Ok(left)
    }

    fn sum(&mut self) -> P<Expr> {
        let mut left = self.atom()?;
        loop {
            let op = if self.eat_sym("+") {
                "+"
            } else if self.eat_sym("-") {
                "-"
            } else {
                return Ok(left);
            };
            self.op()?;
            left = Expr::Bin(op, Box::new(left), Box::new(self.atom()?));
        }
    }

    fn atom(&mut self) -> P<Expr> {
        let tok = self.peek().cloned().ok_or(())?;
        match tok {
            Tok::Int(n) => {
                self.at += 1;
                Ok(Expr::Lit(Value::Int(n)))
            }
            Tok::Str(s) => {
                self.at += 1;
                Ok(Expr::Lit(Value::Str(s)))
            }
            Tok::Sym("-") => {
                self.at += 1;
                let e = self.atom()?;
                Ok(Expr::Bin(
                    "-",
                    Box::new(Expr::Lit(Value::Int(0))),
                    Box::new(e),
                ))
            }
            Tok::Sym("(") => {
                self.at += 1;
                let e = self.expr()?;
                self.sym(")")?;
                Ok(e)
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("null") => {
                self.at += 1;
                Ok(Expr::Lit(Value::Null))
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") => {
                self.at += 1;
                Ok(Expr::Lit(Value::Int(i64::from(
                    w.eq_ignore_ascii_case("true"),
                ))))
            }
            _ => {
                let name = self.ident()?;
                if !self.eat_sym("(") {
                    if self.eat_sym(".") {
                        // t.col: the one table there is.
                        return Ok(Expr::Col(self.ident()?));
                    }
                    return Ok(Expr::Col(name));
                }
                let mut args = Vec::new();
                if name.eq_ignore_ascii_case("count") && self.eat_sym("*") {
                    self.sym(")")?;
                    return Ok(Expr::Call(name, vec![Expr::Star]));
                }
                if !self.eat_sym(")") {
                    args.push(self.expr()?);
                    while self.eat_sym(",") {
                        args.push(self.expr()?);
                    }
                    self.sym(")")?;
                }
                Ok(Expr::Call(name, args))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_select_item_is_named_as_it_was_typed() {
        let Ok(Stmt::Select { items, .. }) = parse("SELECT GET_LOCK('a', 0) , 1 AS one;") else {
            panic!("parses");
        };
        assert_eq!(items[0].1, "GET_LOCK('a', 0)");
        assert_eq!(items[1].1, "one");
    }

    #[test]
    fn a_syntax_error_quotes_the_text_from_where_reading_stopped() {
        let e = parse("SELEC 1").unwrap_err();
        assert_eq!(e.code, 1064);
        assert!(
            e.message.ends_with("near 'SELEC 1' at line 1"),
            "{}",
            e.message
        );
        let e = parse("SELECT 1 FROM").unwrap_err();
        assert!(e.message.ends_with("near '' at line 1"), "{}", e.message);
        assert!(parse("SELECT 'unterminated").is_err());
        assert!(parse("SELECT 'a\\é'").is_ok());
        let deep = format!("SELECT {}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(parse(&deep).unwrap_err().code, 1064);
        let sum = format!("SELECT 1{}", "+1".repeat(100_000));
        assert_eq!(parse(&sum).unwrap_err().code, 1064);
        let nots = format!("SELECT {}1", "NOT -".repeat(100_000));
        assert_eq!(parse(&nots).unwrap_err().code, 1064);
    }
}
