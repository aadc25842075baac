//! RESP2 and RESP3: the request parser and the reply encoder.
//!
//! Requests are the same in both protocols (RESP3 clients still send
//! arrays of bulk strings). Replies are encoded for the connection's
//! protocol ([`Reply::encode_for`]): RESP3's own types fall back to their
//! RESP2 forms as Redis 7.0's `addReply*` functions do (a map is a flat
//! array, a set or a push an array, a double a bulk string, a boolean an
//! integer, a verbatim string a bulk string, null `$-1` or `*-1`).
//!
//! The parser follows `processMultibulkBuffer` and `processInlineBuffer` of
//! Redis 7.0 (`networking.c`) step by step, so malformed input gets the very
//! error text real Redis sends before it closes the connection. It never
//! panics, whatever the bytes (a property test checks this).

/// Longest inline request, or count line, Redis accepts without a newline
/// (`PROTO_INLINE_MAX_SIZE`).
const INLINE_MAX: usize = 64 * 1024;
/// Longest bulk argument (`proto-max-bulk-len`, 512 MB).
const MAX_BULK: i64 = 512 * 1024 * 1024;

/// What the parser found at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parse {
    /// A whole request: its arguments, and how many bytes it used.
    /// An empty argument list (an empty inline line, `*0`) is a request
    /// Redis silently skips.
    Request(Vec<Vec<u8>>, usize),
    /// More bytes are needed.
    Incomplete,
    /// The input is malformed: reply with this error (no leading `-`) and
    /// close the connection, as Redis does.
    Error(&'static str, Option<u8>),
}

impl Parse {
    /// The error line Redis sends for a protocol error, for display (a byte
    /// past ASCII shows as the character of that code).
    pub fn error_text(msg: &'static str, byte: Option<u8>) -> String {
        match byte {
            Some(b) => format!("{msg} '{}'", b as char),
            None => msg.to_string(),
        }
    }

    /// Appends the error reply Redis sends for a protocol error to `out`,
    /// byte for byte: `-ERR <msg>` and, for an unexpected byte, that byte
    /// as it came (a newline shows as a space, as in every Redis error).
    pub fn encode_error(msg: &'static str, byte: Option<u8>, out: &mut Vec<u8>) {
        out.extend_from_slice(b"-ERR ");
        out.extend_from_slice(msg.as_bytes());
        if let Some(b) = byte {
            let b = if b == b'\r' || b == b'\n' { b' ' } else { b };
            out.extend_from_slice(&[b' ', b'\'', b, b'\'']);
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// Redis's `string2ll`: an optional `-`, then digits, no leading zeros (except
/// `0` itself), no spaces, within `i64`.
pub fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = if s[0] == b'-' {
        (true, &s[1..])
    } else {
        (false, s)
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

fn find(buf: &[u8], byte: u8) -> Option<usize> {
    // Redis uses strchr on a NUL-terminated buffer: a NUL byte ends the search.
    for (i, &b) in buf.iter().enumerate() {
        if b == byte {
            return Some(i);
        }
        if b == 0 {
            return None;
        }
    }
    None
}

/// Parses one request from the start of `buf`.
pub fn parse_request(buf: &[u8]) -> Parse {
    if buf.is_empty() {
        return Parse::Incomplete;
    }
    if buf[0] == b'*' {
        parse_multibulk(buf)
    } else {
        parse_inline(buf)
    }
}

/// Where the `\r` ending a `*<count>` or `$<len>` header line in `buf` is,
/// once the whole `\r\n` has arrived; `too_big` is the error for a header
/// that grows past the inline limit without one.
fn header_end(buf: &[u8], too_big: &'static str) -> Result<usize, Parse> {
    let Some(cr) = find(buf, b'\r') else {
        if buf.len() > INLINE_MAX {
            return Err(Parse::Error(too_big, None));
        }
        return Err(Parse::Incomplete);
    };
    if cr + 2 > buf.len() {
        return Err(Parse::Incomplete);
    }
    Ok(cr)
}

fn parse_multibulk(buf: &[u8]) -> Parse {
    let cr = match header_end(buf, "Protocol error: too big mbulk count string") {
        Ok(cr) => cr,
        Err(p) => return p,
    };
    let count = match string2ll(&buf[1..cr]) {
        Some(n) if n <= i64::from(i32::MAX) => n,
        _ => return Parse::Error("Protocol error: invalid multibulk length", None),
    };
    let mut pos = cr + 2;
    if count <= 0 {
        return Parse::Request(Vec::new(), pos);
    }
    let mut args = Vec::with_capacity(count.min(1024) as usize);
    for _ in 0..count {
        let rest = &buf[pos..];
        let cr = match header_end(rest, "Protocol error: too big bulk count string") {
            Ok(cr) => cr,
            Err(p) => return p,
        };
        if rest[0] != b'$' {
            return Parse::Error("Protocol error: expected '$', got", Some(rest[0]));
        }
        let len = match string2ll(&rest[1..cr]) {
            Some(n) if (0..=MAX_BULK).contains(&n) => n as usize,
            _ => return Parse::Error("Protocol error: invalid bulk length", None),
        };
        let start = pos + cr + 2;
        if buf.len() - start < len + 2 {
            return Parse::Incomplete;
        }
        args.push(buf[start..start + len].to_vec());
        // Like Redis, the two bytes after the payload are skipped unchecked.
        pos = start + len + 2;
    }
    Parse::Request(args, pos)
}

fn parse_inline(buf: &[u8]) -> Parse {
    // Redis looks for the newline with `strchr`, which stops at a NUL: a
    // NUL before the newline leaves the request incomplete until the
    // buffer grows past the inline limit.
    let line = &buf[..find(buf, 0).unwrap_or(buf.len())];
    let Some(nl) = find(line, b'\n') else {
        if buf.len() > INLINE_MAX {
            return Parse::Error("Protocol error: too big inline request", None);
        }
        return Parse::Incomplete;
    };
    let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    };
    match split_args(&buf[..line_end]) {
        Some(args) => Parse::Request(args, nl + 1),
        None => Parse::Error("Protocol error: unbalanced quotes in request", None),
    }
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// The byte that the text at the start of `rest` stands for inside `quote`
/// quotes, and how many bytes past the first one it takes: double quotes
/// know `\xHH` and C escapes, single quotes only `\'`.
fn unescape(quote: u8, rest: &[u8]) -> (u8, usize) {
    match (quote, rest) {
        (b'"', [b'\\', b'x', hi, lo, ..]) if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() => {
            (hex_val(*hi) * 16 + hex_val(*lo), 3)
        }
        (b'"', [b'\\', c, ..]) => {
            let byte = match c {
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'b' => 8,
                b'a' => 7,
                other => *other,
            };
            (byte, 1)
        }
        (b'\'', [b'\\', b'\'', ..]) => (b'\'', 1),
        _ => (rest[0], 0),
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c)
}

/// Redis's `sdssplitargs`: splits an inline line into arguments with
/// double quotes (with `\n`, `\xHH` ... escapes) and single quotes.
/// `None` when quotes are unbalanced. Like the C original, which reads a
/// C string, the line ends at its first NUL byte.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Cutting here keeps every later loop advancing: an unquoted NUL used
    // to end an argument without consuming it, for ever.
    let line = &line[..find(line, 0).unwrap_or(line.len())];
    let mut args = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Some(args);
        }
        let mut cur = Vec::new();
        let mut quote: Option<u8> = None;
        loop {
            if let Some(q) = quote {
                if i >= n {
                    // Unbalanced quotes.
                    return None;
                }
                if line[i] == q {
                    // A closing quote must end the argument.
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                }
                let (byte, extra) = unescape(q, &line[i..]);
                cur.push(byte);
                i += extra;
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    q @ (b'"' | b'\'') => quote = Some(q),
                    c => cur.push(c),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}

/// A reply. The RESP2 types, and RESP3's, which a RESP2 connection gets
/// in their RESP2 forms (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+text`
    Status(String),
    /// `-text` (the text carries its code, e.g. `ERR syntax error`).
    Error(String),
    /// `:n`
    Int(i64),
    /// `$len` + bytes
    Bulk(Vec<u8>),
    /// `$-1`
    Nil,
    /// `*n` + elements
    Array(Vec<Reply>),
    /// `*-1`
    NilArray,
    /// RESP3 `_`, as a client reads it (the node answers [`Reply::Nil`]
    /// or [`Reply::NilArray`], which a RESP3 connection gets as `_`).
    Null,
    /// RESP3 `%n` + key, value pairs; a flat array of `2n` in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// RESP3 `~n` + elements; an array in RESP2.
    Set(Vec<Reply>),
    /// RESP3 `,text`, the text as Redis formats the double (`%.17g`,
    /// `inf`, `-inf`); a bulk string of the same text in RESP2.
    Double(String),
    /// RESP3 `#t` / `#f`; `:1` / `:0` in RESP2.
    Bool(bool),
    /// RESP3 `>n` + elements (pub/sub messages); an array in RESP2.
    Push(Vec<Reply>),
    /// RESP3 `=len` + `txt:` + text (Redis's `addReplyVerbatim`, which
    /// INFO, CLIENT INFO and CLIENT LIST answer with, always as `txt`); a
    /// bulk string of the text in RESP2. (No format field: it would make
    /// every reply bigger, and deeply nested replies recurse per level.)
    Verbatim(Vec<u8>),
}

/// The protocol a connection speaks (`HELLO 2`, `HELLO 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, every connection's protocol until `HELLO 3`.
    #[default]
    Resp2,
    /// RESP3.
    Resp3,
}

impl Reply {
    /// `+OK`
    pub fn ok() -> Reply {
        Reply::Status("OK".into())
    }

    /// An error reply with this text (no leading `-`).
    pub fn err(text: impl Into<String>) -> Reply {
        Reply::Error(text.into())
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the RESP2 encoding of this reply to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_for(Protocol::Resp2, out);
    }

    /// Appends this reply's encoding in protocol `proto` to `out`.
    pub fn encode_for(&self, proto: Protocol, out: &mut Vec<u8>) {
        let resp3 = proto == Protocol::Resp3;
        match self {
            Reply::Status(s) => {
                out.push(b'+');
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Reply::Error(s) => {
                out.push(b'-');
                // Redis replaces newlines in error texts by spaces.
                out.extend(
                    s.bytes()
                        .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
                );
                out.extend_from_slice(b"\r\n");
            }
            Reply::Int(n) => {
                out.push(b':');
                push_int(out, *n);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Bulk(b) => {
                out.push(b'$');
                push_int(out, b.len() as i64);
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Nil | Reply::NilArray | Reply::Null if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::Nil | Reply::Null => out.extend_from_slice(b"$-1\r\n"),
            Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(items) => {
                out.push(b'*');
                push_int(out, items.len() as i64);
                out.extend_from_slice(b"\r\n");
                for item in items {
                    item.encode_for(proto, out);
                }
            }
            other => other.encode_resp3_type(proto, out),
        }
    }

    /// Encodes RESP3's own types (apart from [`Reply::encode_for`], whose
    /// recursion over deeply nested arrays stays small for it).
    #[inline(never)]
    fn encode_resp3_type(&self, proto: Protocol, out: &mut Vec<u8>) {
        let resp3 = proto == Protocol::Resp3;
        match self {
            Reply::Set(items) => aggregate(if resp3 { b'~' } else { b'*' }, items, proto, out),
            Reply::Push(items) => aggregate(if resp3 { b'>' } else { b'*' }, items, proto, out),
            Reply::Map(pairs) => {
                let (kind, len) = if resp3 {
                    (b'%', pairs.len())
                } else {
                    (b'*', pairs.len() * 2)
                };
                header(kind, len, out);
                for (k, v) in pairs {
                    k.encode_for(proto, out);
                    v.encode_for(proto, out);
                }
            }
            Reply::Double(text) if resp3 => {
                out.push(b',');
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Reply::Double(text) => Reply::Bulk(text.clone().into_bytes()).encode_for(proto, out),
            Reply::Bool(b) if resp3 => {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" })
            }
            Reply::Bool(b) => Reply::Int(i64::from(*b)).encode_for(proto, out),
            Reply::Verbatim(text) if resp3 => {
                header(b'=', text.len() + 4, out);
                out.extend_from_slice(b"txt:");
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Verbatim(text) => Reply::Bulk(text.clone()).encode_for(proto, out),
            // The RESP2 types are `encode_for`'s.
            other => other.encode_for(proto, out),
        }
    }

    /// This reply with RESP3's types replaced by their RESP2 forms (what a
    /// script's conversions see unless it asked for RESP3).
    pub fn into_resp2(self) -> Reply {
        match self {
            Reply::Array(items) | Reply::Set(items) | Reply::Push(items) => {
                Reply::Array(items.into_iter().map(Reply::into_resp2).collect())
            }
            Reply::Map(pairs) => Reply::Array(
                pairs
                    .into_iter()
                    .flat_map(|(k, v)| [k.into_resp2(), v.into_resp2()])
                    .collect(),
            ),
            Reply::Double(text) => Reply::Bulk(text.into_bytes()),
            Reply::Bool(b) => Reply::Int(i64::from(b)),
            Reply::Verbatim(text) => Reply::Bulk(text),
            other => other,
        }
    }

    /// The RESP2 encoding of this reply.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

/// The aggregate a client read, by its type byte: `~` a set, `>` a push,
/// `%` a map of the items paired up, `*` an array. Apart from
/// [`parse_reply`], whose recursion (one frame per level of a deeply
/// nested reply) stays small for it.
#[inline(never)]
fn typed_aggregate(kind: u8, items: Vec<Reply>) -> Reply {
    match kind {
        b'~' => Reply::Set(items),
        b'>' => Reply::Push(items),
        b'%' => {
            let mut it = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            Reply::Map(pairs)
        }
        _ => Reply::Array(items),
    }
}

/// Writes an aggregate's `<kind><len>\r\n` header.
fn header(kind: u8, len: usize, out: &mut Vec<u8>) {
    out.push(kind);
    push_int(out, len as i64);
    out.extend_from_slice(b"\r\n");
}

/// Writes an array-like aggregate (array, set, push) of `items`.
fn aggregate(kind: u8, items: &[Reply], proto: Protocol, out: &mut Vec<u8>) {
    header(kind, items.len(), out);
    for item in items {
        item.encode_for(proto, out);
    }
}

fn push_int(out: &mut Vec<u8>, n: i64) {
    let mut buf = itoa_buf(n);
    out.append(&mut buf);
}

fn itoa_buf(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// Encodes a request (an array of bulk strings), as a client sends it.
pub fn encode_request(args: &[&[u8]], out: &mut Vec<u8>) {
    out.push(b'*');
    push_int(out, args.len() as i64);
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        push_int(out, a.len() as i64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Parses one reply (as a client reads it) from the start of `buf`:
/// `Ok(Some((reply, used)))`, `Ok(None)` if incomplete, `Err` if malformed.
/// Nested arrays are filled with a stack of their own, not by recursion:
/// a script's reply may nest thousands deep (Redis sends up to 7,995).
pub fn parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    // The aggregates being filled: their kind (`*`, `~`, `>`, `%`), their
    // items so far and how many remain.
    let mut open: Vec<(u8, Vec<Reply>, usize)> = Vec::new();
    let mut pos = 0;
    loop {
        let Some((head, used)) = parse_head(&buf[pos..])? else {
            return Ok(None);
        };
        pos += used;
        let mut done = match head {
            Head::Reply(r) => r,
            Head::Aggregate(kind, 0) => typed_aggregate(kind, Vec::new()),
            Head::Aggregate(kind, n) => {
                open.push((kind, Vec::with_capacity(n.min(1024)), n));
                continue;
            }
        };
        // Into the innermost open array, closing every array it fills.
        loop {
            let Some((kind, items, left)) = open.last_mut() else {
                return Ok(Some((done, pos)));
            };
            items.push(done);
            *left -= 1;
            if *left > 0 {
                break;
            }
            done = typed_aggregate(*kind, std::mem::take(items));
            open.pop();
        }
    }
}

/// One reply's first line (and a bulk string's payload).
enum Head {
    /// A reply that is not an array with elements.
    Reply(Reply),
    /// An aggregate's header: its kind (`*` array, `~` set, `>` push, `%`
    /// map) and how many replies follow (a map's keys and values both
    /// count).
    Aggregate(u8, usize),
}

/// Parses the reply that starts `buf`, but only the header of an array:
/// `Ok(Some((head, used)))`, `Ok(None)` if incomplete, `Err` if malformed.
fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let Some(cr) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    if cr == 0 {
        return Err("a reply line without a type".into());
    }
    let line = &buf[1..cr];
    let next = cr + 2;
    let text = || String::from_utf8_lossy(line).into_owned();
    let int = || string2ll(line).ok_or_else(|| format!("bad integer {:?}", text()));
    let reply = |r: Reply, used: usize| Ok(Some((Head::Reply(r), used)));
    match buf[0] {
        b'+' => reply(Reply::Status(text()), next),
        b'-' => reply(Reply::Error(text()), next),
        b':' => reply(Reply::Int(int()?), next),
        b'$' => {
            let n = int()?;
            if n < 0 {
                return reply(Reply::Nil, next);
            }
            let n = n as usize;
            if buf.len() < next + n + 2 {
                return Ok(None);
            }
            reply(Reply::Bulk(buf[next..next + n].to_vec()), next + n + 2)
        }
        b'*' | b'~' | b'>' | b'%' => {
            let n = int()?;
            if n < 0 {
                return reply(Reply::NilArray, next);
            }
            let count = if buf[0] == b'%' { n * 2 } else { n };
            Ok(Some((Head::Aggregate(buf[0], count as usize), next)))
        }
        b'_' => reply(Reply::Null, next),
        b',' => reply(Reply::Double(text()), next),
        b'#' => reply(Reply::Bool(line == b"t"), next),
        b'=' => {
            let n = int()?.max(0) as usize;
            if buf.len() < next + n + 2 {
                return Ok(None);
            }
            let body = &buf[next..next + n];
            match body.strip_prefix(b"txt:") {
                Some(text) => reply(Reply::Verbatim(text.to_vec()), next + n + 2),
                None => Err("a verbatim string not of format txt".into()),
            }
        }
        other => Err(format!("unexpected reply type byte {other:#x}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_line_ends_at_its_first_nul_byte() {
        assert_eq!(split_args(b"PING\0x"), Some(vec![b"PING".to_vec()]));
        assert_eq!(split_args(b"\0PING"), Some(vec![]));
        assert_eq!(split_args(b"ECHO \"a\0b\""), None);
    }

    #[test]
    fn a_nul_before_the_newline_leaves_an_inline_request_incomplete_as_in_redis() {
        assert!(matches!(parse_request(b"PING\0x\r\n"), Parse::Incomplete));
        let mut big = b"PING\0".to_vec();
        big.resize(INLINE_MAX + 10, b'x');
        big.extend_from_slice(b"\r\n");
        assert!(matches!(
            parse_request(&big),
            Parse::Error("Protocol error: too big inline request", None)
        ));
    }

    fn req(s: &[u8]) -> Vec<Vec<u8>> {
        match parse_request(s) {
            Parse::Request(a, _) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_multibulk_request_is_split_into_its_arguments() {
        assert_eq!(
            req(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"),
            vec![b"GET".to_vec(), b"k".to_vec()]
        );
    }

    #[test]
    fn a_partial_request_asks_for_more_bytes() {
        assert_eq!(parse_request(b"*2\r\n$3\r\nGE"), Parse::Incomplete);
        assert_eq!(parse_request(b"*2\r"), Parse::Incomplete);
    }

    #[test]
    fn inline_requests_honour_quotes_and_escapes() {
        assert_eq!(
            req(b"SET \"a b\" 'c\\'d' \"\\x41\\n\"\r\n"),
            vec![
                b"SET".to_vec(),
                b"a b".to_vec(),
                b"c'd".to_vec(),
                b"A\n".to_vec()
            ]
        );
        assert!(matches!(parse_request(b"GET \"a\r\n"), Parse::Error(..)));
    }

    #[test]
    fn malformed_requests_get_the_redis_protocol_errors() {
        assert_eq!(
            parse_request(b"*1\r\nx\r\n"),
            Parse::Error("Protocol error: expected '$', got", Some(b'x'))
        );
        assert_eq!(
            parse_request(b"*abc\r\n"),
            Parse::Error("Protocol error: invalid multibulk length", None)
        );
        assert_eq!(
            parse_request(b"*1\r\n$-5\r\n"),
            Parse::Error("Protocol error: invalid bulk length", None)
        );
    }

    #[test]
    fn string2ll_is_as_strict_as_redis() {
        assert_eq!(string2ll(b"10"), Some(10));
        assert_eq!(string2ll(b"-10"), Some(-10));
        assert_eq!(string2ll(b"010"), None);
        assert_eq!(string2ll(b"+1"), None);
        assert_eq!(string2ll(b" 1"), None);
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(string2ll(b"9223372036854775808"), None);
    }

    #[test]
    fn replies_round_trip_through_the_client_parser() {
        let r = Reply::Array(vec![
            Reply::Int(-3),
            Reply::Bulk(b"x\r\ny".to_vec()),
            Reply::Nil,
            Reply::Status("OK".into()),
            Reply::Error("ERR e".into()),
            Reply::NilArray,
        ]);
        let bytes = r.to_bytes();
        assert_eq!(parse_reply(&bytes), Ok(Some((r, bytes.len()))));
    }

    #[test]
    fn a_reply_line_without_a_type_is_an_error_not_a_panic() {
        assert!(parse_reply(b"\r\n").is_err());
        assert!(parse_reply(b"\r\n+OK\r\n").is_err());
    }

    #[test]
    fn protocol_errors_carry_the_unexpected_byte_as_it_came() {
        let mut out = Vec::new();
        Parse::encode_error("Protocol error: expected '$', got", Some(0xff), &mut out);
        assert_eq!(out, b"-ERR Protocol error: expected '$', got '\xff'\r\n");
        out.clear();
        Parse::encode_error("Protocol error: expected '$', got", Some(b'\r'), &mut out);
        assert_eq!(out, b"-ERR Protocol error: expected '$', got ' '\r\n");
        out.clear();
        Parse::encode_error("Protocol error: invalid bulk length", None, &mut out);
        assert_eq!(out, b"-ERR Protocol error: invalid bulk length\r\n");
    }

    proptest::proptest! {
        // A fixed seed: every run checks the same cases.
        #![proptest_config(proptest::test_runner::Config {
            cases: 2000,
            rng_seed: proptest::test_runner::RngSeed::Fixed(20_261_124),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]

        #[test]
        fn random_bytes_never_panic_the_parser(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = parse_request(&bytes);
            let _ = parse_reply(&bytes);
        }

        #[test]
        fn random_bytes_after_a_valid_prefix_never_panic_the_parser(
            tail in proptest::collection::vec(proptest::sample::select(b"*$\r\n0123-ab\"' \\x".to_vec()), 0..64)
        ) {
            let mut b = b"*3\r\n$3\r\nSET\r\n".to_vec();
            b.extend_from_slice(&tail);
            let _ = parse_request(&b);
            let mut b = b"SET \"".to_vec();
            b.extend_from_slice(&tail);
            let _ = parse_request(&b);
        }
    }
}
