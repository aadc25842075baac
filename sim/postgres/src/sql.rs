//! The statements simpg understands, and a small recursive-descent parser
//! for them. It recognizes the handful of shapes lock designs send; a
//! statement it cannot read is a syntax error at the token where reading
//! stopped (PostgreSQL's 42601 `syntax error at or near "X"`), and a
//! statement PostgreSQL has but simpg does not is [`Statement::Unsupported`].
//!
//! Every token keeps its byte offset so errors carry PostgreSQL's
//! `position` field, which psql turns into its `LINE 1:` caret.

use crate::error::PgError;
use crate::value::{ColumnType, Value};

/// One token: a word (keyword or identifier, lower-cased unless quoted), a
/// number, a string literal, or a symbol.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Number(String),
    Str(String),
    Sym(&'static str),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    /// Byte offset in the query text.
    at: usize,
    /// The token as typed, for error messages.
    text: String,
}

/// An expression: literals, columns, function calls, arithmetic and
/// comparisons joined by AND/OR.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Literal(Value),
    /// A column of the row being read, and the offset of its name.
    Column(String, usize),
    /// `excluded.col` in ON CONFLICT DO UPDATE: the row not inserted.
    Excluded(String, usize),
    /// `name(args)`, with the offset of the name for errors.
    Call {
        /// The function's name, lower-cased.
        name: String,
        /// Its arguments.
        args: Vec<Expr>,
        /// The offset of the name in the query text.
        at: usize,
    },
    /// `interval 'N unit'`, in microseconds.
    Interval(i64),
    /// `a op b`.
    Binary(Box<Expr>, BinOp, Box<Expr>),
    /// `NOT a`.
    Not(Box<Expr>),
    /// `a IS [NOT] NULL`; the flag is true for IS NULL.
    IsNull(Box<Expr>, bool),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `=`
    Eq,
    /// `<>` or `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `AND`
    And,
    /// `OR`
    Or,
}

/// One item of a SELECT list.
#[derive(Debug, Clone, PartialEq)]
pub enum SelectItem {
    /// `*`: every column of the table.
    Star,
    /// An expression, with its `AS` name if given.
    Expr(Expr, Option<String>),
}

/// INSERT's ON CONFLICT clause.
#[derive(Debug, Clone, PartialEq)]
pub enum OnConflict {
    /// DO NOTHING: skip the row.
    Nothing,
    /// DO UPDATE SET ... [WHERE ...]: update the row already there
    /// (`excluded.col` is the row that was to be inserted).
    Update {
        /// The assignments.
        sets: Vec<(String, Expr)>,
        /// Update only if this holds of the row already there.
        filter: Option<Expr>,
    },
}

/// A column of CREATE TABLE.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    /// Its name.
    pub name: String,
    /// Its type.
    pub column_type: ColumnType,
    /// PRIMARY KEY or UNIQUE.
    pub unique: bool,
    /// NOT NULL (or PRIMARY KEY).
    pub not_null: bool,
}

/// A parsed statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// BEGIN, or START TRANSACTION (`start`: its tag says so).
    Begin {
        /// Spelled START TRANSACTION.
        start: bool,
    },
    /// COMMIT / END.
    Commit,
    /// ROLLBACK / ABORT.
    Rollback,
    /// SELECT, with or without FROM.
    Select {
        /// The list.
        items: Vec<SelectItem>,
        /// The table and its offset, if any.
        from: Option<(String, usize)>,
        /// The WHERE condition.
        filter: Option<Expr>,
        /// FOR UPDATE: lock the rows read.
        for_update: bool,
    },
    /// CREATE TABLE.
    CreateTable {
        /// Its name.
        name: String,
        /// IF NOT EXISTS.
        if_not_exists: bool,
        /// Its columns.
        columns: Vec<ColumnDef>,
    },
    /// DROP TABLE [IF EXISTS].
    DropTable {
        /// Its name and offset.
        name: (String, usize),
        /// IF EXISTS.
        if_exists: bool,
    },
    /// INSERT INTO t (cols) VALUES (...), (...).
    Insert {
        /// The table and its offset.
        table: (String, usize),
        /// The columns named, or none for all in order.
        columns: Vec<String>,
        /// The rows.
        rows: Vec<Vec<Expr>>,
        /// ON CONFLICT: what to do instead of a duplicate key error.
        on_conflict: Option<OnConflict>,
        /// RETURNING: what to answer for each row inserted.
        returning: Vec<SelectItem>,
    },
    /// UPDATE t SET c = e, ... WHERE ...
    Update {
        /// The table and its offset.
        table: (String, usize),
        /// The assignments.
        sets: Vec<(String, Expr)>,
        /// The WHERE condition.
        filter: Option<Expr>,
        /// RETURNING: what to answer for each row updated.
        returning: Vec<SelectItem>,
    },
    /// DELETE FROM t WHERE ...
    Delete {
        /// The table and its offset.
        table: (String, usize),
        /// The WHERE condition.
        filter: Option<Expr>,
        /// RETURNING: what to answer for each row deleted.
        returning: Vec<SelectItem>,
    },
    /// A statement PostgreSQL has and simpg does not serve, by its name.
    Unsupported(String),
}

/// Splits `query` into statements and parses each; the first error wins
/// and nothing runs, as PostgreSQL parses a whole query string first.
pub fn parse(query: &str) -> Result<Vec<Statement>, PgError> {
    let tokens = tokenize(query)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        end: query.len(),
    };
    let mut statements = Vec::new();
    loop {
        while parser.eat_sym(";") {}
        if parser.peek().is_none() {
            return Ok(statements);
        }
        statements.push(parser.statement()?);
        if parser.peek().is_some() && !parser.eat_sym(";") {
            return Err(parser.syntax_error());
        }
    }
}

fn tokenize(query: &str) -> Result<Vec<Token>, PgError> {
    let bytes = query.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let tok = if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80)
            {
                i += 1;
            }
            Tok::Word(query[start..i].to_lowercase())
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            Tok::Number(query[start..i].to_string())
        } else if c == b'\'' || c == b'"' {
            let (text, next) = quoted(query, i, c).ok_or_else(|| {
                let what = if c == b'\'' {
                    "unterminated quoted string"
                } else {
                    "unterminated quoted identifier"
                };
                PgError::syntax(format!("{what} at or near \"{}\"", &query[start..]), start)
            })?;
            i = next;
            if c == b'\'' {
                Tok::Str(text)
            } else {
                Tok::Quoted(text)
            }
        } else {
            let two = query.get(i..i + 2).unwrap_or("");
            let sym = ["<=", ">=", "<>", "!=", "::"]
                .into_iter()
                .find(|s| *s == two)
                .or_else(|| {
                    ["(", ")", ",", ";", "*", "=", "<", ">", "+", "-", "."]
                        .into_iter()
                        .find(|s| s.as_bytes()[0] == c)
                });
            match sym {
                Some(s) => {
                    i += s.len();
                    Tok::Sym(s)
                }
                None => {
                    let ch = query[i..].chars().next().unwrap_or('?');
                    return Err(PgError::syntax(
                        format!("syntax error at or near \"{ch}\""),
                        start,
                    ));
                }
            }
        };
        tokens.push(Token {
            tok,
            at: start,
            text: query[start..i].to_string(),
        });
    }
    Ok(tokens)
}

/// A quoted string or identifier starting at `start`, with doubled quotes
/// as one, and the offset after it.
fn quoted(query: &str, start: usize, quote: u8) -> Option<(String, usize)> {
    let bytes = query.as_bytes();
    let mut i = start + 1;
    let mut out = String::new();
    let mut from = i;
    while i < bytes.len() {
        if bytes[i] == quote {
            out.push_str(&query[from..i]);
            if bytes.get(i + 1) == Some(&quote) {
                out.push(quote as char);
                i += 2;
                from = i;
                continue;
            }
            return Some((out, i + 1));
        }
        i += 1;
    }
    None
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// The query's length: where "end of input" is.
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.tok)
    }

    fn at(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |t| t.at)
    }

    fn syntax_error(&self) -> PgError {
        match self.tokens.get(self.pos) {
            Some(t) => PgError::syntax(format!("syntax error at or near \"{}\"", t.text), t.at),
            None => PgError::syntax("syntax error at end of input".into(), self.end),
        }
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(w)) if w == word)
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let hit = self.is_word(word);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn word(&mut self, word: &str) -> Result<(), PgError> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.syntax_error())
        }
    }

    fn eat_sym(&mut self, sym: &str) -> bool {
        let hit = matches!(self.peek(), Some(Tok::Sym(s)) if *s == sym);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn sym(&mut self, sym: &str) -> Result<(), PgError> {
        if self.eat_sym(sym) {
            Ok(())
        } else {
            Err(self.syntax_error())
        }
    }

    /// An identifier: a word that is not reserved, or a quoted name.
    fn ident(&mut self) -> Result<String, PgError> {
        match self.peek() {
            Some(Tok::Word(w)) if !RESERVED.contains(&w.as_str()) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            Some(Tok::Quoted(q)) => {
                let q = q.clone();
                self.pos += 1;
                Ok(q)
            }
            _ => Err(self.syntax_error()),
        }
    }

    fn statement(&mut self) -> Result<Statement, PgError> {
        let Some(Tok::Word(first)) = self.peek().cloned() else {
            return Err(self.syntax_error());
        };
        self.pos += 1;
        match first.as_str() {
            "begin" | "start" => {
                if first == "start" {
                    self.word("transaction")?;
                } else if !self.eat_word("transaction") {
                    self.eat_word("work");
                }
                Ok(Statement::Begin {
                    start: first == "start",
                })
            }
            "commit" | "end" | "rollback" | "abort" => {
                if !self.eat_word("transaction") {
                    self.eat_word("work");
                }
                Ok(if matches!(first.as_str(), "commit" | "end") {
                    Statement::Commit
                } else {
                    Statement::Rollback
                })
            }
            "select" => self.select(),
            "create" => self.create(),
            "drop" => {
                self.word("table")?;
                let if_exists = self.eat_word("if");
                if if_exists {
                    self.word("exists")?;
                }
                let at = self.at();
                let name = self.ident()?;
                Ok(Statement::DropTable {
                    name: (name, at),
                    if_exists,
                })
            }
            "insert" => self.insert(),
            "update" => self.update(),
            "delete" => {
                self.word("from")?;
                let table = self.table_name()?;
                let filter = self.filter()?;
                let returning = self.returning()?;
                Ok(Statement::Delete {
                    table,
                    filter,
                    returning,
                })
            }
            other if KNOWN_UNSUPPORTED.contains(&other) => {
                // Skip to the end of the statement: it is refused whole.
                while !matches!(self.peek(), None | Some(Tok::Sym(";"))) {
                    self.pos += 1;
                }
                Ok(Statement::Unsupported(other.to_uppercase()))
            }
            _ => {
                self.pos -= 1;
                Err(self.syntax_error())
            }
        }
    }

    fn table_name(&mut self) -> Result<(String, usize), PgError> {
        let at = self.at();
        let mut name = self.ident()?;
        // `public.locks` is `locks`: there is one schema.
        if name == "public" && self.eat_sym(".") {
            name = self.ident()?;
        }
        Ok((name, at))
    }

    fn filter(&mut self) -> Result<Option<Expr>, PgError> {
        if self.eat_word("where") {
            Ok(Some(self.expr()?))
        } else {
            Ok(None)
        }
    }

    fn select(&mut self) -> Result<Statement, PgError> {
        let items = self.select_items()?;
        let from = if self.eat_word("from") {
            Some(self.table_name()?)
        } else {
            None
        };
        let filter = self.filter()?;
        let for_update = self.eat_word("for");
        if for_update {
            self.word("update")?;
        }
        Ok(Statement::Select {
            items,
            from,
            filter,
            for_update,
        })
    }

    /// `RETURNING items`, or nothing.
    fn returning(&mut self) -> Result<Vec<SelectItem>, PgError> {
        if self.eat_word("returning") {
            self.select_items()
        } else {
            Ok(Vec::new())
        }
    }

    fn select_items(&mut self) -> Result<Vec<SelectItem>, PgError> {
        let mut items = Vec::new();
        loop {
            if self.eat_sym("*") {
                items.push(SelectItem::Star);
            } else {
                let expr = self.expr()?;
                let alias = if self.eat_word("as") {
                    Some(self.ident()?)
                } else {
                    None
                };
                items.push(SelectItem::Expr(expr, alias));
            }
            if !self.eat_sym(",") {
                return Ok(items);
            }
        }
    }

    fn create(&mut self) -> Result<Statement, PgError> {
        if !self.eat_word("table") {
            let what = match self.peek() {
                Some(Tok::Word(w)) => format!("CREATE {}", w.to_uppercase()),
                _ => return Err(self.syntax_error()),
            };
            while !matches!(self.peek(), None | Some(Tok::Sym(";"))) {
                self.pos += 1;
            }
            return Ok(Statement::Unsupported(what));
        }
        let if_not_exists = self.eat_word("if");
        if if_not_exists {
            self.word("not")?;
            self.word("exists")?;
        }
        let (name, _) = self.table_name()?;
        self.sym("(")?;
        let mut columns: Vec<ColumnDef> = Vec::new();
        loop {
            if self.eat_word("primary") {
                // A table constraint: PRIMARY KEY (col).
                self.word("key")?;
                self.sym("(")?;
                let col = self.ident()?;
                self.sym(")")?;
                if let Some(c) = columns.iter_mut().find(|c| c.name == col) {
                    c.unique = true;
                    c.not_null = true;
                }
            } else {
                let name = self.ident()?;
                let column_type = self.column_type()?;
                let mut def = ColumnDef {
                    name,
                    column_type,
                    unique: false,
                    not_null: false,
                };
                loop {
                    if self.eat_word("primary") {
                        self.word("key")?;
                        def.unique = true;
                        def.not_null = true;
                    } else if self.eat_word("unique") {
                        def.unique = true;
                    } else if self.eat_word("not") {
                        self.word("null")?;
                        def.not_null = true;
                    } else if self.eat_word("null") {
                    } else {
                        break;
                    }
                }
                columns.push(def);
            }
            if !self.eat_sym(",") {
                break;
            }
        }
        self.sym(")")?;
        Ok(Statement::CreateTable {
            name,
            if_not_exists,
            columns,
        })
    }

    fn column_type(&mut self) -> Result<ColumnType, PgError> {
        let at = self.at();
        let Some(Tok::Word(w)) = self.peek().cloned() else {
            return Err(self.syntax_error());
        };
        self.pos += 1;
        let t = match w.as_str() {
            "text" => ColumnType::Text,
            "varchar" => ColumnType::Varchar,
            "character" => {
                self.word("varying")?;
                ColumnType::Varchar
            }
            "bigint" | "int8" | "bigserial" => ColumnType::Int8,
            "int" | "integer" | "int4" | "serial" => ColumnType::Int4,
            "boolean" | "bool" => ColumnType::Bool,
            "timestamptz" => ColumnType::Timestamptz,
            "timestamp" => {
                if self.eat_word("with") {
                    self.word("time")?;
                    self.word("zone")?;
                }
                ColumnType::Timestamptz
            }
            _ => {
                return Err(PgError::new("42704", format!("type \"{w}\" does not exist")).at(at));
            }
        };
        // varchar(64): the length is not enforced.
        if self.eat_sym("(") {
            self.number()?;
            self.sym(")")?;
        }
        Ok(t)
    }

    fn number(&mut self) -> Result<String, PgError> {
        match self.peek() {
            Some(Tok::Number(n)) => {
                let n = n.clone();
                self.pos += 1;
                Ok(n)
            }
            _ => Err(self.syntax_error()),
        }
    }

    fn insert(&mut self) -> Result<Statement, PgError> {
        self.word("into")?;
        let table = self.table_name()?;
        let mut columns = Vec::new();
        if self.eat_sym("(") {
            loop {
                columns.push(self.ident()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
            self.sym(")")?;
        }
        self.word("values")?;
        let mut rows = Vec::new();
        loop {
            self.sym("(")?;
            let mut row = Vec::new();
            loop {
                row.push(self.expr()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
            self.sym(")")?;
            rows.push(row);
            if !self.eat_sym(",") {
                break;
            }
        }
        let mut on_conflict = None;
        if self.eat_word("on") {
            self.word("conflict")?;
            if self.eat_sym("(") {
                self.ident()?;
                self.sym(")")?;
            }
            self.word("do")?;
            on_conflict = Some(if self.eat_word("update") {
                self.word("set")?;
                let sets = self.assignments()?;
                let filter = self.filter()?;
                OnConflict::Update { sets, filter }
            } else {
                self.word("nothing")?;
                OnConflict::Nothing
            });
        }
        let returning = self.returning()?;
        Ok(Statement::Insert {
            table,
            columns,
            rows,
            on_conflict,
            returning,
        })
    }

    fn update(&mut self) -> Result<Statement, PgError> {
        let table = self.table_name()?;
        self.word("set")?;
        let sets = self.assignments()?;
        let filter = self.filter()?;
        let returning = self.returning()?;
        Ok(Statement::Update {
            table,
            sets,
            filter,
            returning,
        })
    }

    /// `col = expr, ...` of SET.
    fn assignments(&mut self) -> Result<Vec<(String, Expr)>, PgError> {
        let mut sets = Vec::new();
        loop {
            let col = self.ident()?;
            self.sym("=")?;
            sets.push((col, self.expr()?));
            if !self.eat_sym(",") {
                return Ok(sets);
            }
        }
    }

    fn expr(&mut self) -> Result<Expr, PgError> {
        let mut left = self.and_expr()?;
        while self.eat_word("or") {
            let right = self.and_expr()?;
            left = Expr::Binary(Box::new(left), BinOp::Or, Box::new(right));
        }
        Ok(left)
    }

    fn and_expr(&mut self) -> Result<Expr, PgError> {
        let mut left = self.not_expr()?;
        while self.eat_word("and") {
            let right = self.not_expr()?;
            left = Expr::Binary(Box::new(left), BinOp::And, Box::new(right));
        }
        Ok(left)
    }

    fn not_expr(&mut self) -> Result<Expr, PgError> {
        if self.eat_word("not") {
            return Ok(Expr::Not(Box::new(self.not_expr()?)));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, PgError> {
        let left = self.sum()?;
        if self.eat_word("is") {
            let not = self.eat_word("not");
            self.word("null")?;
            return Ok(Expr::IsNull(Box::new(left), !not));
        }
        let op = match self.peek() {
            Some(Tok::Sym("=")) => BinOp::Eq,
            Some(Tok::Sym("<>")) | Some(Tok::Sym("!=")) => BinOp::Ne,
            Some(Tok::Sym("<")) => BinOp::Lt,
            Some(Tok::Sym("<=")) => BinOp::Le,
            Some(Tok::Sym(">")) => BinOp::Gt,
            Some(Tok::Sym(">=")) => BinOp::Ge,
            _ => return Ok(left),
        };
        self.pos += 1;
        let right = self.sum()?;
        Ok(Expr::Binary(Box::new(left), op, Box::new(right)))
    }

    fn sum(&mut self) -> Result<Expr, PgError> {
        let mut left = self.unary()?;
        loop {
            let op = if self.eat_sym("+") {
                BinOp::Add
            } else if self.eat_sym("-") {
                BinOp::Sub
            } else {
                return Ok(left);
            };
            let right = self.unary()?;
            left = Expr::Binary(Box::new(left), op, Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Expr, PgError> {
        if self.eat_sym("-") {
            // `-9223372036854775808` is a literal, not minus an overflow.
            if let Some(Tok::Number(n)) = self.peek().cloned()
                && let Ok(v) = format!("-{n}").parse::<i64>()
            {
                self.pos += 1;
                return Ok(Expr::Literal(Value::Int(v)));
            }
            return match self.unary()? {
                Expr::Literal(Value::Int(n)) => Ok(Expr::Literal(Value::Int(-n))),
                other => Ok(Expr::Binary(
                    Box::new(Expr::Literal(Value::Int(0))),
                    BinOp::Sub,
                    Box::new(other),
                )),
            };
        }
        let expr = self.primary()?;
        // `x::bigint` and the like: the value is kept as it is.
        if self.eat_sym("::") {
            self.column_type()?;
        }
        Ok(expr)
    }

    fn primary(&mut self) -> Result<Expr, PgError> {
        let at = self.at();
        let Some(tok) = self.peek().cloned() else {
            return Err(self.syntax_error());
        };
        match tok {
            Tok::Number(n) => {
                self.pos += 1;
                n.parse::<i64>()
                    .map(|v| Expr::Literal(Value::Int(v)))
                    .map_err(|_| {
                        PgError::new("0A000", format!("numeric constant {n} is not supported"))
                            .at(at)
                    })
            }
            Tok::Str(s) => {
                self.pos += 1;
                Ok(Expr::Literal(Value::Text(s)))
            }
            Tok::Sym("(") => {
                self.pos += 1;
                let e = self.expr()?;
                self.sym(")")?;
                Ok(e)
            }
            Tok::Word(w) if w == "true" || w == "false" => {
                self.pos += 1;
                Ok(Expr::Literal(Value::Bool(w == "true")))
            }
            Tok::Word(w) if w == "null" => {
                self.pos += 1;
                Ok(Expr::Literal(Value::Null))
            }
            Tok::Word(w) if w == "interval" => {
                self.pos += 1;
                let at = self.at();
                match self.peek().cloned() {
                    Some(Tok::Str(s)) => {
                        self.pos += 1;
                        parse_interval(&s).map(Expr::Interval).ok_or_else(|| {
                            PgError::new(
                                "22007",
                                format!("invalid input syntax for type interval: \"{s}\""),
                            )
                            .at(at)
                        })
                    }
                    _ => Err(self.syntax_error()),
                }
            }
            Tok::Word(w) if w == "current_timestamp" => {
                self.pos += 1;
                Ok(Expr::Call {
                    name: "now".into(),
                    args: Vec::new(),
                    at,
                })
            }
            Tok::Word(_) | Tok::Quoted(_) => {
                let name = self.ident()?;
                if self.eat_sym("(") {
                    let mut args = Vec::new();
                    if !self.eat_sym(")") {
                        loop {
                            args.push(self.expr()?);
                            if !self.eat_sym(",") {
                                break;
                            }
                        }
                        self.sym(")")?;
                    }
                    Ok(Expr::Call { name, args, at })
                } else if self.eat_sym(".") {
                    // `excluded.col`, or `table.col`: one table at a time.
                    let at = self.at();
                    let column = self.ident()?;
                    Ok(if name == "excluded" {
                        Expr::Excluded(column, at)
                    } else {
                        Expr::Column(column, at)
                    })
                } else {
                    Ok(Expr::Column(name, at))
                }
            }
            _ => Err(self.syntax_error()),
        }
    }
}

/// `'N unit'` (or a sum of them) in microseconds.
fn parse_interval(text: &str) -> Option<i64> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || !words.len().is_multiple_of(2) {
        return None;
    }
    let mut total = 0i64;
    for pair in words.chunks(2) {
        let n: i64 = pair[0].parse().ok()?;
        // PostgreSQL's own unit spellings: `m` is a minute, `ms` a
        // millisecond.
        let unit = match pair[1].to_ascii_lowercase().as_str() {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => 1,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => 1_000,
            "second" | "seconds" | "s" | "sec" | "secs" => 1_000_000,
            "minute" | "minutes" | "m" | "min" | "mins" => 60_000_000,
            "hour" | "hours" | "h" | "hr" | "hrs" => 3_600_000_000,
            "day" | "days" | "d" => 86_400_000_000,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(unit)?)?;
    }
    Some(total)
}

/// Words that cannot be a bare identifier here.
const RESERVED: &[&str] = &[
    "select",
    "from",
    "where",
    "and",
    "or",
    "not",
    "for",
    "as",
    "values",
    "set",
    "on",
    "is",
    "null",
    "true",
    "false",
    "into",
    "table",
    "primary",
    "unique",
    "interval",
    "returning",
];

/// PostgreSQL statements simpg knows by name but does not serve: they get
/// 0A000 rather than a syntax error.
const KNOWN_UNSUPPORTED: &[&str] = &[
    "alter",
    "analyze",
    "call",
    "checkpoint",
    "close",
    "cluster",
    "comment",
    "copy",
    "deallocate",
    "declare",
    "discard",
    "do",
    "execute",
    "explain",
    "fetch",
    "grant",
    "listen",
    "lock",
    "merge",
    "move",
    "notify",
    "prepare",
    "reindex",
    "release",
    "reset",
    "revoke",
    "savepoint",
    "set",
    "show",
    "truncate",
    "unlisten",
    "vacuum",
    "values",
    "with",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_units_are_read_as_postgresql_spells_them() {
        assert_eq!(parse_interval("5 m"), Some(300_000_000));
        assert_eq!(parse_interval("5 ms"), Some(5_000));
        assert_eq!(
            parse_interval("2 seconds 500 milliseconds"),
            Some(2_500_000)
        );
        assert_eq!(parse_interval("1 Hour"), Some(3_600_000_000));
        assert_eq!(parse_interval("3 fortnights"), None);
    }
}
