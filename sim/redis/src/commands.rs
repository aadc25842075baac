//! The command table, and the two ways into it: a client's request
//! ([`Node::execute`]) and a script's `redis.call` ([`Node::call_from_script`]).
//!
//! A command's name is looked up once, in [`COMMANDS`]; its [`Command`]
//! entry then says everything else: its arity, whether it writes (and so is
//! refused on a replica), what a client in subscribed mode gets, and its
//! [`Handler`]. The handler's kind says what the command needs, and with it
//! how the node runs it:
//!
//! * [`Handler::Keyspace`]: the keyspace alone (and, for `TIME`, the clock).
//!   For a client, the node freezes the keyspace's clock first, then commits
//!   the command's changes and remembers the replication offset for `WAIT`.
//!   Inside a script the clock stays frozen at the script's start and the
//!   script's changes are committed together when it ends.
//! * [`Handler::Node`]: node state beyond the keyspace (`INFO`, `ROLE`,
//!   `PUBLISH`); changes no key.
//! * [`Handler::Client`]: the caller's connection (its name, subscriptions,
//!   what the connection does next). A script has no connection, so these
//!   are the commands a script may not call.
//!
//! The handlers live in one file per family: [`keyspace`] (the commands
//! locks use: strings, counters, hashes, deletion, expiry), [`strings`],
//! [`bits`], [`lcs`], [`keys`], [`hashes`], [`memory`], [`object`], [`lists`], [`sets`],
//! [`sorted_sets`], [`zset_pops`], [`transactions`], [`config`], [`server`], [`info`],
//! [`hello`], [`scripting`], [`pubsub`], [`replication`] and
//! [`command_info`] (`COMMAND`, from Redis's [`facts`]); [`errors`]
//! holds the error replies they share, [`scan`] what the `SCAN` family
//! shares, [`resp3`] the RESP3 forms of replies. Arities and error texts
//! follow Redis 7.0.15.

pub(crate) mod bits;
pub(crate) mod command_info;
pub(crate) mod config;
pub(crate) mod errors;
pub(crate) mod facts;
pub(crate) mod functions;
pub(crate) mod hashes;
pub(crate) mod hello;
pub(crate) mod info;
pub(crate) mod keys;
pub(crate) mod keyspace;
pub(crate) mod kill;
pub(crate) mod lcs;
pub(crate) mod lists;
pub(crate) mod long_double;
pub(crate) mod maxmemory;
pub(crate) mod memory;
pub(crate) mod min_replicas;
pub(crate) mod object;
pub(crate) mod pubsub;
pub(crate) mod replication;
pub(crate) mod resp3;
pub(crate) mod scan;
pub(crate) mod scripting;
pub(crate) mod server;
pub(crate) mod sets;
pub(crate) mod sort;
pub(crate) mod sorted_sets;
pub(crate) mod strings;
pub(crate) mod transactions;
pub(crate) mod zset_pops;

use crate::blocking::{BlockFn, Ticket};
use crate::client::Client;
use crate::databases::Databases;
use crate::events::Origin;
use crate::handle::{NodeHandle, Role};
use crate::keyspace::Keyspace;
use crate::node::{Node, State};
use crate::notifications;
use crate::resp::{Protocol, Reply};
use crate::version::{Feature, ServerVersion};

use errors::{arity_error, unknown_command, unknown_subcommand};

/// Runs a command against the keyspace; the handle gives `TIME` the node's
/// clock. An `Err` is the error reply (so handlers can use `?`).
pub(crate) type KeyspaceFn = fn(&mut Keyspace, &[Vec<u8>], &NodeHandle) -> Result<Reply, Reply>;

/// Runs a command across databases (`FLUSHALL`, `MOVE`, `SWAPDB`,
/// `COPY ... DB`): all of them, and the index of the selected one.
pub(crate) type DatabasesFn =
    fn(&mut Databases, usize, &[Vec<u8>], &NodeHandle) -> Result<Reply, Reply>;

/// Runs a command that reads (or signals through) node state.
pub(crate) type NodeFn = fn(&Node, &[Vec<u8>]) -> Reply;

/// Runs a command that needs the caller's connection.
pub(crate) type ClientFn = fn(&Node, &mut Client, &[Vec<u8>]) -> Out;

/// What runs a command, by what it needs (see the module docs).
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// Needs the keyspace only; callable from scripts.
    Keyspace(KeyspaceFn),
    /// Needs every database; runs and commits as `Keyspace`.
    Databases(DatabasesFn),
    /// Needs the node; callable from scripts.
    Node(NodeFn),
    /// Needs the caller's connection; not callable from scripts.
    Client(ClientFn),
}

/// How many arguments a command takes, its name included (Redis writes
/// `Exactly(n)` as arity `n` and `AtLeast(n)` as `-n`).
#[derive(Clone, Copy)]
pub(crate) enum Arity {
    /// Exactly this many.
    Exactly(usize),
    /// This many or more.
    AtLeast(usize),
}

/// What a client in subscribed mode (after `SUBSCRIBE`) gets for a command.
#[derive(Clone, Copy)]
pub(crate) enum Subscribed {
    /// Redis's "only (P|S)SUBSCRIBE / ... are allowed in this context" error.
    Refused,
    /// The command runs as usual.
    Allowed,
    /// The command answers this way instead (`PING`'s push-style reply).
    Answers(fn(&[Vec<u8>]) -> Reply),
}

/// One entry of the command table.
#[derive(Clone, Copy)]
pub(crate) struct Command {
    /// Canonical lowercase name (also the name error replies quote).
    pub(crate) name: &'static str,
    /// How many arguments it takes, the name included.
    pub(crate) arity: Arity,
    /// Changes keys: refused on a replica (`READONLY`).
    pub(crate) write: bool,
    /// What a client in subscribed mode gets.
    pub(crate) subscribed: Subscribed,
    /// What runs it.
    pub(crate) handler: Handler,
    /// A container's subcommands (`SCRIPT LOAD`, `CLIENT ID`); empty for
    /// a plain command.
    pub(crate) subcommands: &'static [Subcommand],
    /// The newer-than-7.0 feature it is, if it is one: a node of a
    /// version without it answers that it does not know the command.
    pub(crate) feature: Option<Feature>,
    /// A blocking command's client form (its handler is the form that
    /// never blocks, for scripts and transactions); see `crate::blocking`.
    pub(crate) blocking: Option<BlockFn>,
    /// Refused to scripts (Redis's `NOSCRIPT` flag).
    pub(crate) no_script: bool,
    /// How its reply changes for a RESP3 client (a map for `HGETALL`, a
    /// set for `SMEMBERS`, see [`resp3`]); `None`: as in RESP2.
    pub(crate) resp3: Option<resp3::Resp3Fn>,
}

/// One subcommand of a container command.
#[derive(Clone, Copy)]
pub(crate) struct Subcommand {
    /// Its full lowercase name (`script|load`), as error replies quote it.
    pub(crate) name: &'static str,
    /// How many arguments it takes, the container's name included.
    pub(crate) arity: Arity,
}

impl Subcommand {
    /// The subcommand's own name (`load` for `script|load`).
    fn short_name(&self) -> &'static str {
        self.name.split_once('|').map_or(self.name, |(_, s)| s)
    }
}

/// A client's command as the table resolves it: the command and, for a
/// container, the subcommand.
#[derive(Clone, Copy)]
pub(crate) struct Resolved {
    /// The command.
    pub(crate) cmd: &'static Command,
    /// The subcommand, if the command is a container.
    pub(crate) sub: Option<&'static Subcommand>,
}

impl Resolved {
    /// The name errors quote: `get`, or `script|load` for a subcommand.
    pub(crate) fn full_name(&self) -> &'static str {
        self.sub.map_or(self.cmd.name, |s| s.name)
    }
}

impl Command {
    const fn new(name: &'static str, arity: Arity, handler: Handler) -> Command {
        Command {
            name,
            arity,
            write: false,
            subscribed: Subscribed::Refused,
            handler,
            subcommands: &[],
            feature: None,
            blocking: None,
            no_script: false,
            resp3: None,
        }
    }

    /// A command that only reads the keyspace.
    const fn read(name: &'static str, arity: Arity, run: KeyspaceFn) -> Command {
        Command::new(name, arity, Handler::Keyspace(run))
    }

    /// A command that writes the keyspace.
    const fn write(name: &'static str, arity: Arity, run: KeyspaceFn) -> Command {
        Command {
            write: true,
            ..Command::new(name, arity, Handler::Keyspace(run))
        }
    }

    /// A command that writes across databases.
    const fn databases(name: &'static str, arity: Arity, run: DatabasesFn) -> Command {
        Command {
            write: true,
            ..Command::new(name, arity, Handler::Databases(run))
        }
    }

    /// A command that needs the node.
    const fn node(name: &'static str, arity: Arity, run: NodeFn) -> Command {
        Command::new(name, arity, Handler::Node(run))
    }

    /// A command that needs the caller's connection.
    const fn client(name: &'static str, arity: Arity, run: ClientFn) -> Command {
        Command::new(name, arity, Handler::Client(run))
    }

    /// A command that needs the caller's connection and stays allowed in
    /// subscribed mode.
    const fn subscribed_client(name: &'static str, arity: Arity, run: ClientFn) -> Command {
        Command {
            subscribed: Subscribed::Allowed,
            ..Command::client(name, arity, run)
        }
    }

    /// Sets what a client in subscribed mode gets.
    const fn when_subscribed(self, subscribed: Subscribed) -> Command {
        Command { subscribed, ..self }
    }

    /// Makes the command a container of these subcommands.
    const fn with_subcommands(self, subcommands: &'static [Subcommand]) -> Command {
        Command {
            subcommands,
            ..self
        }
    }

    /// Makes the command a feature only some versions have.
    const fn only_with(self, feature: Feature) -> Command {
        Command {
            feature: Some(feature),
            ..self
        }
    }

    /// Whether a node of `version` knows the command.
    pub(crate) fn known_to(&self, version: ServerVersion) -> bool {
        self.feature.is_none_or(|f| version.has(f))
    }

    /// Makes the command block a client as `block` says (see
    /// `crate::blocking`).
    const fn blocking(self, block: BlockFn) -> Command {
        Command {
            blocking: Some(block),
            ..self
        }
    }

    /// Refuses the command to scripts.
    const fn no_script(self) -> Command {
        Command {
            no_script: true,
            ..self
        }
    }

    /// Gives the command its RESP3 reply form.
    const fn resp3(self, form: resp3::Resp3Fn) -> Command {
        Command {
            resp3: Some(form),
            ..self
        }
    }

    /// Whether `argc` arguments (the name included) fit the arity.
    pub(crate) fn arity_fits(&self, argc: usize) -> bool {
        match self.arity {
            Arity::Exactly(n) => argc == n,
            Arity::AtLeast(n) => argc >= n,
        }
    }
}

use Arity::{AtLeast, Exactly};
use Subscribed::Answers;
use keyspace as ks;
use transactions as tx;

/// Every command this node knows, sorted by name (for binary search).
pub(crate) const COMMANDS: &[Command] = &[
    Command::write("append", Exactly(3), strings::append),
    Command::write("blmove", Exactly(6), lists::blmove)
        .blocking(lists::blmove_attempt)
        .no_script(),
    Command::write("blmpop", AtLeast(5), lists::blmpop).blocking(lists::blmpop_attempt),
    Command::write("blpop", AtLeast(3), lists::blpop)
        .blocking(lists::BLPOP_ATTEMPT)
        .no_script(),
    Command::write("brpop", AtLeast(3), lists::brpop)
        .blocking(lists::BRPOP_ATTEMPT)
        .no_script(),
    Command::write("brpoplpush", Exactly(4), lists::blmove)
        .blocking(lists::blmove_attempt)
        .no_script(),
    Command::write("bzmpop", AtLeast(5), zset_pops::bzmpop)
        .blocking(zset_pops::bzmpop_attempt)
        .resp3(resp3::zmpop),
    Command::write("bzpopmax", AtLeast(3), zset_pops::bzpopmax)
        .blocking(zset_pops::BZPOPMAX_ATTEMPT)
        .no_script()
        .resp3(resp3::bzpop),
    Command::write("bzpopmin", AtLeast(3), zset_pops::bzpopmin)
        .blocking(zset_pops::BZPOPMIN_ATTEMPT)
        .no_script()
        .resp3(resp3::bzpop),
    Command::client("client", AtLeast(2), server::client).with_subcommands(server::CLIENT),
    Command::node("command", AtLeast(1), command_info::command)
        .with_subcommands(command_info::COMMAND),
    Command::client("config", AtLeast(2), config::config).with_subcommands(config::CONFIG),
    Command::databases("copy", AtLeast(3), crate::databases::copy),
    Command::read("dbsize", Exactly(1), server::dbsize),
    Command::write("decr", Exactly(2), ks::decr),
    Command::write("decrby", Exactly(3), ks::decrby),
    Command::write("del", AtLeast(2), ks::del),
    Command::write("delex", AtLeast(2), ks::delex).only_with(Feature::Delex),
    Command::write("delifeq", Exactly(3), ks::delifeq).only_with(Feature::Delifeq),
    Command::client("discard", Exactly(1), tx::discard),
    Command::read("echo", Exactly(2), server::echo),
    Command::client("eval", AtLeast(3), scripting::eval),
    Command::client("eval_ro", AtLeast(3), scripting::eval_ro),
    Command::client("evalsha", AtLeast(3), scripting::evalsha),
    Command::client("evalsha_ro", AtLeast(3), scripting::evalsha_ro),
    Command::client("exec", Exactly(1), tx::exec),
    Command::read("exists", AtLeast(2), ks::exists),
    Command::write("expire", AtLeast(3), ks::EXPIRE),
    Command::write("expireat", AtLeast(3), ks::EXPIREAT),
    Command::read("expiretime", Exactly(2), ks::EXPIRETIME),
    Command::client("fcall", AtLeast(3), functions::fcall),
    Command::client("fcall_ro", AtLeast(3), functions::fcall_ro),
    Command::databases("flushall", AtLeast(1), crate::databases::flushall),
    Command::write("flushdb", AtLeast(1), ks::flush),
    Command::client("function", AtLeast(2), functions::function)
        .with_subcommands(functions::FUNCTION),
    Command::read("get", Exactly(2), ks::get),
    Command::read("getbit", Exactly(3), bits::getbit),
    Command::write("getdel", Exactly(2), strings::getdel),
    Command::write("getex", AtLeast(2), strings::getex),
    Command::read("getrange", Exactly(4), strings::getrange),
    Command::write("getset", Exactly(3), ks::getset),
    Command::write("hdel", AtLeast(3), ks::hdel),
    Command::subscribed_client("hello", AtLeast(1), hello::hello),
    Command::read("hexists", Exactly(3), ks::hexists),
    Command::read("hget", Exactly(3), ks::hget),
    Command::read("hgetall", Exactly(2), ks::hgetall).resp3(resp3::map),
    Command::write("hincrby", Exactly(4), ks::hincrby),
    Command::write("hincrbyfloat", Exactly(4), hashes::hincrbyfloat),
    Command::read("hkeys", Exactly(2), ks::hkeys),
    Command::read("hlen", Exactly(2), ks::hlen),
    Command::read("hmget", AtLeast(3), ks::hmget),
    Command::write("hmset", AtLeast(4), ks::hmset),
    Command::read("hrandfield", AtLeast(2), hashes::hrandfield).resp3(resp3::with_values),
    Command::read("hscan", AtLeast(3), hashes::hscan),
    Command::write("hset", AtLeast(4), ks::hset),
    Command::write("hsetnx", Exactly(4), hashes::hsetnx),
    Command::read("hstrlen", Exactly(3), hashes::hstrlen),
    Command::read("hvals", Exactly(2), ks::hvals),
    Command::write("incr", Exactly(2), ks::incr),
    Command::write("incrby", Exactly(3), ks::incrby),
    Command::write("incrbyfloat", Exactly(3), strings::incrbyfloat),
    Command::node("info", AtLeast(1), info::info),
    Command::read("keys", Exactly(2), keys::keys),
    Command::read("lcs", AtLeast(3), lcs::lcs),
    Command::read("lindex", Exactly(3), lists::lindex),
    Command::write("linsert", Exactly(5), lists::linsert),
    Command::read("llen", Exactly(2), lists::llen),
    Command::write("lmove", Exactly(5), lists::lmove),
    Command::write("lmpop", AtLeast(4), lists::lmpop),
    Command::write("lpop", AtLeast(2), lists::lpop),
    Command::read("lpos", AtLeast(3), lists::lpos),
    Command::write("lpush", AtLeast(3), lists::lpush),
    Command::write("lpushx", AtLeast(3), lists::lpushx),
    Command::read("lrange", Exactly(4), lists::lrange),
    Command::write("lrem", Exactly(4), lists::lrem),
    Command::write("lset", Exactly(4), lists::lset),
    Command::write("ltrim", Exactly(4), lists::ltrim),
    Command::read("memory", AtLeast(2), memory::memory).with_subcommands(memory::MEMORY),
    Command::read("mget", AtLeast(2), ks::mget),
    Command::databases("move", Exactly(3), crate::databases::move_key),
    Command::write("mset", AtLeast(3), strings::mset),
    Command::write("msetnx", AtLeast(3), strings::msetnx),
    Command::client("multi", Exactly(1), tx::multi),
    Command::read("object", AtLeast(2), object::object).with_subcommands(object::OBJECT),
    Command::write("persist", Exactly(2), ks::persist),
    Command::write("pexpire", AtLeast(3), ks::PEXPIRE),
    Command::write("pexpireat", AtLeast(3), ks::PEXPIREAT),
    Command::read("pexpiretime", Exactly(2), ks::PEXPIRETIME),
    Command::read("ping", AtLeast(1), server::ping).when_subscribed(Answers(pubsub::ping)),
    Command::write("psetex", Exactly(4), ks::PSETEX),
    Command::subscribed_client("psubscribe", AtLeast(2), pubsub::psubscribe),
    Command::client("psync", AtLeast(3), replication::psync),
    Command::read("pttl", Exactly(2), ks::PTTL),
    Command::node("publish", Exactly(3), pubsub::publish),
    Command::node("pubsub", AtLeast(2), pubsub::pubsub).with_subcommands(pubsub::PUBSUB),
    Command::subscribed_client("punsubscribe", AtLeast(1), pubsub::punsubscribe),
    Command::subscribed_client("quit", AtLeast(1), server::quit),
    Command::read("randomkey", Exactly(1), keys::randomkey),
    Command::write("rename", Exactly(3), keys::rename),
    Command::write("renamenx", Exactly(3), keys::renamenx),
    Command::client("replicaof", Exactly(3), replication::replicaof),
    Command::node("role", Exactly(1), replication::role),
    Command::write("rpop", AtLeast(2), lists::rpop),
    Command::write("rpoplpush", Exactly(3), lists::rpoplpush),
    Command::write("rpush", AtLeast(3), lists::rpush),
    Command::write("rpushx", AtLeast(3), lists::rpushx),
    Command::write("sadd", AtLeast(3), sets::sadd),
    Command::read("scan", AtLeast(2), keys::scan),
    Command::read("scard", Exactly(2), sets::scard),
    Command::client("script", AtLeast(2), scripting::script).with_subcommands(scripting::SCRIPT),
    Command::read("sdiff", AtLeast(2), sets::sdiff).resp3(resp3::set),
    Command::write("sdiffstore", AtLeast(3), sets::sdiffstore),
    Command::node("select", Exactly(2), server::select),
    Command::write("set", AtLeast(3), ks::set),
    Command::write("setbit", Exactly(4), bits::setbit),
    Command::write("setex", Exactly(4), ks::SETEX),
    Command::write("setnx", Exactly(3), ks::setnx),
    Command::write("setrange", Exactly(4), strings::setrange),
    Command::client("shutdown", AtLeast(1), server::shutdown),
    Command::read("sinter", AtLeast(2), sets::sinter).resp3(resp3::set),
    Command::read("sintercard", AtLeast(3), sets::sintercard),
    Command::write("sinterstore", AtLeast(3), sets::sinterstore),
    Command::read("sismember", Exactly(3), sets::sismember),
    Command::client("slaveof", Exactly(3), replication::replicaof),
    Command::read("smembers", Exactly(2), sets::smembers).resp3(resp3::set),
    Command::read("smismember", AtLeast(3), sets::smismember),
    Command::write("smove", Exactly(4), sets::smove),
    Command::write("sort", AtLeast(2), sort::sort),
    Command::read("sort_ro", AtLeast(2), sort::sort_ro),
    Command::write("spop", AtLeast(2), sets::spop).resp3(resp3::spop),
    Command::read("srandmember", AtLeast(2), sets::srandmember),
    Command::write("srem", AtLeast(3), sets::srem),
    Command::read("sscan", AtLeast(3), sets::sscan),
    Command::read("strlen", Exactly(2), ks::strlen),
    Command::subscribed_client("subscribe", AtLeast(2), pubsub::subscribe),
    Command::read("substr", Exactly(4), strings::getrange),
    Command::read("sunion", AtLeast(2), sets::sunion).resp3(resp3::set),
    Command::write("sunionstore", AtLeast(3), sets::sunionstore),
    Command::databases("swapdb", Exactly(3), crate::databases::swapdb),
    Command::read("time", Exactly(1), server::time),
    Command::read("touch", AtLeast(2), keys::touch),
    Command::read("ttl", Exactly(2), ks::TTL),
    Command::read("type", Exactly(2), ks::type_of),
    Command::write("unlink", AtLeast(2), ks::del),
    Command::subscribed_client("unsubscribe", AtLeast(1), pubsub::unsubscribe),
    Command::client("unwatch", Exactly(1), tx::unwatch),
    Command::client("wait", Exactly(3), replication::wait),
    Command::client("watch", AtLeast(2), tx::watch),
    Command::write("zadd", AtLeast(4), sorted_sets::zadd).resp3(resp3::double),
    Command::read("zcard", Exactly(2), sorted_sets::zcard),
    Command::read("zcount", Exactly(4), sorted_sets::zcount),
    Command::read("zdiff", AtLeast(3), sorted_sets::zdiff).resp3(resp3::set_operation_with_scores),
    Command::write("zdiffstore", AtLeast(4), sorted_sets::zdiffstore),
    Command::write("zincrby", Exactly(4), sorted_sets::zincrby).resp3(resp3::double),
    Command::read("zinter", AtLeast(3), sorted_sets::zinter)
        .resp3(resp3::set_operation_with_scores),
    Command::read("zintercard", AtLeast(3), sorted_sets::zintercard),
    Command::write("zinterstore", AtLeast(4), sorted_sets::zinterstore),
    Command::read("zlexcount", Exactly(4), sorted_sets::zlexcount),
    Command::write("zmpop", AtLeast(4), zset_pops::zmpop).resp3(resp3::zmpop),
    Command::read("zmscore", AtLeast(3), sorted_sets::zmscore).resp3(resp3::doubles),
    Command::write("zpopmax", AtLeast(2), zset_pops::zpopmax).resp3(resp3::zpop),
    Command::write("zpopmin", AtLeast(2), zset_pops::zpopmin).resp3(resp3::zpop),
    Command::read("zrandmember", AtLeast(2), sorted_sets::zrandmember).resp3(resp3::zrandmember),
    Command::read("zrange", AtLeast(4), sorted_sets::zrange).resp3(resp3::range_with_scores),
    Command::read("zrangebylex", AtLeast(4), sorted_sets::zrangebylex),
    Command::read("zrangebyscore", AtLeast(4), sorted_sets::zrangebyscore)
        .resp3(resp3::range_with_scores),
    Command::write("zrangestore", AtLeast(5), sorted_sets::zrangestore),
    Command::read("zrank", Exactly(3), sorted_sets::zrank),
    Command::write("zrem", AtLeast(3), sorted_sets::zrem),
    Command::write("zremrangebylex", Exactly(4), sorted_sets::zremrangebylex),
    Command::write("zremrangebyrank", Exactly(4), sorted_sets::zremrangebyrank),
    Command::write(
        "zremrangebyscore",
        Exactly(4),
        sorted_sets::zremrangebyscore,
    ),
    Command::read("zrevrange", AtLeast(4), sorted_sets::zrevrange).resp3(resp3::range_with_scores),
    Command::read("zrevrangebylex", AtLeast(4), sorted_sets::zrevrangebylex),
    Command::read(
        "zrevrangebyscore",
        AtLeast(4),
        sorted_sets::zrevrangebyscore,
    )
    .resp3(resp3::range_with_scores),
    Command::read("zrevrank", Exactly(3), sorted_sets::zrevrank),
    Command::read("zscan", AtLeast(3), sorted_sets::zscan),
    Command::read("zscore", Exactly(3), sorted_sets::zscore).resp3(resp3::double),
    Command::read("zunion", AtLeast(3), sorted_sets::zunion)
        .resp3(resp3::set_operation_with_scores),
    Command::write("zunionstore", AtLeast(4), sorted_sets::zunionstore),
];

/// Looks a command up by name, case-insensitively.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Command> {
    let mut buf = [0u8; 16];
    if name.len() > buf.len() {
        return None;
    }
    for (i, c) in name.iter().enumerate() {
        buf[i] = c.to_ascii_lowercase();
    }
    let lower = &buf[..name.len()];
    COMMANDS
        .binary_search_by(|c| c.name.as_bytes().cmp(lower))
        .ok()
        .map(|i| &COMMANDS[i])
}

/// Resolves a client's request as Redis's `processCommand` starts: the
/// command must exist (in a node of `version`), fit its arity, and, for a
/// container, name a known subcommand that fits its own arity. An `Err`
/// is the error reply.
pub(crate) fn resolve(args: &[Vec<u8>], version: ServerVersion) -> Result<Resolved, Reply> {
    let Some(cmd) = lookup(&args[0]).filter(|c| c.known_to(version)) else {
        return Err(unknown_command(args));
    };
    if !cmd.arity_fits(args.len()) {
        return Err(arity_error(cmd.name));
    }
    // `COMMAND` alone is a command of its own; every other container's
    // arity asks for a subcommand.
    if cmd.subcommands.is_empty() || args.len() == 1 {
        return Ok(Resolved { cmd, sub: None });
    }
    let Some(sub) = cmd
        .subcommands
        .iter()
        .find(|s| is_option(&args[1], s.short_name()))
    else {
        return Err(unknown_subcommand(args));
    };
    let fits = match sub.arity {
        Arity::Exactly(n) => args.len() == n,
        Arity::AtLeast(n) => args.len() >= n,
    };
    if !fits {
        return Err(arity_error(sub.name));
    }
    Ok(Resolved {
        cmd,
        sub: Some(sub),
    })
}

/// The refusals Redis's `processCommand` makes after resolving a command,
/// in its order: a write on a replica (`READONLY`), then a command a
/// client in subscribed mode may not send. Shared by the node and by the
/// real-TCP server's front, which answers for a busy node.
pub(crate) fn refusal(r: Resolved, subscribed: bool, role: &Role) -> Option<Reply> {
    if r.cmd.write && *role != Role::Master {
        return Some(readonly_error());
    }
    if subscribed && matches!(r.cmd.subscribed, Subscribed::Refused) {
        return Some(Reply::err(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            r.full_name()
        )));
    }
    None
}

/// Whether an argument is the option (or subcommand) `name`, ignoring case
/// as Redis does.
pub(crate) fn is_option(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// What the connection must do after a command.
pub(crate) enum Out {
    /// Send this reply.
    Reply(Reply),
    /// Send these replies, in order.
    Replies(Vec<Reply>),
    /// Send this reply, then close the connection.
    Quit(Reply),
    /// Block until `numreplicas` replicas acknowledged the client's last
    /// write, or `timeout_ms` passed (0: forever); answer the count.
    Wait {
        /// Replicas to wait for.
        numreplicas: i64,
        /// Timeout in ms; 0 waits forever.
        timeout_ms: i64,
    },
    /// Hand the connection over to replication: the caller is a replica.
    Psync {
        /// How long each write stays in this master's buffer for the
        /// replica before it is sent (the replica's `replication_delay`).
        lag: std::time::Duration,
    },
    /// A blocking command found nothing to take: the client waits (its
    /// connection still reads, so that its end is seen) until a key serves
    /// it, the node unblocks it, or its timeout passes.
    Block(Ticket),
    /// `SHUTDOWN`: the node stops; the caller gets no reply (the process
    /// is gone), as with Redis.
    Shutdown,
}

pub(crate) fn readonly_error() -> Reply {
    Reply::err("READONLY You can't write against a read only replica.")
}

impl Node {
    /// Whether `cmd` must be refused here: it writes and this node is a
    /// replica.
    fn refuses_write(&self, cmd: &Command) -> bool {
        cmd.write && self.state.borrow().role != Role::Master
    }

    /// Executes one client command, counted for `INFO`.
    pub(crate) fn execute(&self, c: &mut Client, args: &[Vec<u8>]) -> Out {
        let resolved = match resolve(args, self.handle.config().version) {
            Ok(r) => r,
            Err(e) => {
                // Redis counts an arity error against the command.
                let arity = matches!(&e, Reply::Error(t) if t.starts_with("ERR wrong number"));
                let name = lookup(&args[0]).filter(|_| arity).map(|cmd| cmd.name);
                self.state.borrow_mut().stats.rejected(name, &e);
                // Only a known command can be an `EXEC` refused.
                let is_exec = lookup(&args[0]).is_some_and(|c| c.name == "exec");
                return Out::Reply(transactions::reject(self, c, is_exec, e));
            }
        };
        let cmd = resolved.cmd;
        c.view.command.set(resolved.full_name());
        // Subscribed mode restricts only a RESP2 connection: a RESP3 one
        // reads pushes apart from replies and may send anything.
        let subscribed = c.is_subscribed() && c.proto == Protocol::Resp2;
        let refused = transactions::not_allowed_in_multi(c, resolved)
            .or_else(|| self.refuse_when_out_of_memory(c, resolved, args))
            .or_else(|| self.refuse_write_without_replicas(c, resolved, args))
            .or_else(|| refusal(resolved, subscribed, &self.state.borrow().role));
        if let Some(e) = refused {
            self.state
                .borrow_mut()
                .stats
                .rejected(Some(resolved.full_name()), &e);
            return Out::Reply(transactions::reject(self, c, cmd.name == "exec", e));
        }
        if let Some(queued) = transactions::queue(c, resolved, args) {
            c.refresh_view();
            return queued;
        }
        let out = self.execute_resolved(c, args, cmd);
        c.refresh_view();
        let reply = match &out {
            Out::Reply(r) | Out::Quit(r) => Some(r),
            _ => None,
        };
        self.state
            .borrow_mut()
            .stats
            .ran(resolved.full_name(), reply);
        out
    }

    /// Executes a command that passed [`resolve`] and [`refusal`], outside
    /// a transaction's queue.
    fn execute_resolved(&self, c: &mut Client, args: &[Vec<u8>], cmd: &'static Command) -> Out {
        let subscribed = c.is_subscribed() && c.proto == Protocol::Resp2;
        if subscribed && let Subscribed::Answers(answer) = cmd.subscribed {
            return Out::Reply(answer(args));
        }
        if let Some(block) = cmd.blocking {
            return self.execute_blocking(c, args, block, cmd.resp3);
        }
        let out = self.dispatch(c, cmd, args);
        // A script the server's stop ended (real TCP only; `EVAL`,
        // `EVALSHA`, `FCALL` alike): Redis exits mid-script and its caller
        // reads no reply, only the connection closing.
        if self.lua.stopped_by_shutdown() {
            return Out::Shutdown;
        }
        out
    }

    /// Runs a command that passed its checks, in the client's selected
    /// database (a `SELECT` it runs changes it). Also how `EXEC` runs its
    /// queued commands.
    pub(crate) fn dispatch(&self, c: &mut Client, cmd: &Command, args: &[Vec<u8>]) -> Out {
        self.selected.set(c.db);
        self.caller.set(Some(c.id));
        let out = match cmd.handler {
            Handler::Keyspace(_) | Handler::Databases(_) => {
                let reply = {
                    let mut st = self.state.borrow_mut();
                    // Inside `EXEC` the clock stays frozen at its start.
                    if !self.in_exec.get() {
                        st.dbs.set_now(self.handle.now_ms());
                    }
                    self.run_on_databases(&mut st, cmd, args, !self.in_exec.get())
                };
                self.commit(Origin::Client);
                c.woff = self.state.borrow().offset;
                Out::Reply(reply)
            }
            Handler::Node(run) => Out::Reply(run(self, args)),
            Handler::Client(run) => run(self, c, args),
        };
        c.db = self.selected.get();
        // A RESP3 client gets the command's RESP3 form (a map, a set...).
        match (out, cmd.resp3) {
            (Out::Reply(r), Some(form)) if c.proto == Protocol::Resp3 && !r.is_error() => {
                Out::Reply(form(args, r))
            }
            (out, _) => out,
        }
    }

    /// Runs a keyspace or databases handler in the selected database.
    /// Runs a keyspace or databases command; `for_client`: its reply goes
    /// straight to a client (not to a script or into an `EXEC`'s array),
    /// so its keyspace events are ordered around that reply.
    fn run_on_databases(
        &self,
        st: &mut State,
        cmd: &Command,
        args: &[Vec<u8>],
        for_client: bool,
    ) -> Reply {
        let db = self.selected.get();
        let reply = match cmd.handler {
            Handler::Keyspace(run) => run(st.dbs.db_mut(db), args, &self.handle),
            Handler::Databases(run) => run(&mut st.dbs, db, args, &self.handle),
            Handler::Node(_) | Handler::Client(_) => return Reply::Nil,
        };
        self.notice_changes(st, cmd, args, for_client);
        reply.unwrap_or_else(|e| e)
    }

    /// Turns what the command just changed into keyspace events, when
    /// `notify-keyspace-events` asks for any (see `crate::notifications`).
    fn notice_changes(&self, st: &mut State, cmd: &Command, args: &[Vec<u8>], for_client: bool) {
        let on = st.notify_classes.any();
        // A one-database command changed only the selected database.
        let dbs = match cmd.handler {
            Handler::Keyspace(_) => self.selected.get()..self.selected.get() + 1,
            _ => 0..crate::databases::DATABASES,
        };
        for db in dbs {
            let ks = st.dbs.db_mut(db);
            if !on {
                ks.skip_unnoticed();
                continue;
            }
            let (changes, created) = ks.take_unnoticed();
            if changes.is_empty() {
                continue;
            }
            let group = command_info::group_of(cmd.name);
            let mut events =
                notifications::of_command(cmd.name, group, args, &changes, &created, db);
            if for_client {
                notifications::order_around_reply(cmd.name, &mut events);
            }
            st.notifications.extend(events);
        }
    }
    /// Executes one command for a running script (`redis.call`). The
    /// script's changes are committed when the script ends.
    pub(crate) fn call_from_script(&self, args: &[Vec<u8>]) -> Reply {
        let version = self.handle.config().version;
        let Some(cmd) = lookup(&args[0]).filter(|c| c.known_to(version)) else {
            return Reply::err("ERR Unknown Redis command called from script");
        };
        let wrong_args =
            || Reply::err("ERR Wrong number of args calling Redis command from script");
        if !cmd.arity_fits(args.len()) {
            return wrong_args();
        }
        // A container's subcommand is looked up as part of the command:
        // an unknown one is an unknown command, and its own arity counts.
        if !cmd.subcommands.is_empty() {
            let Some(sub) = cmd
                .subcommands
                .iter()
                .find(|s| is_option(&args[1], s.short_name()))
            else {
                return Reply::err("ERR Unknown Redis command called from script");
            };
            let fits = match sub.arity {
                Arity::Exactly(n) => args.len() == n,
                Arity::AtLeast(n) => args.len() >= n,
            };
            if !fits {
                return wrong_args();
            }
        }
        match cmd.handler {
            // A script has no connection of its own.
            Handler::Client(_) => Reply::err("ERR This Redis command is not allowed from script"),
            _ if cmd.no_script => Reply::err("ERR This Redis command is not allowed from script"),
            // A read-only script's writes are refused before a replica's.
            _ if cmd.write && self.lua.is_read_only() => {
                Reply::err("ERR Write commands are not allowed from read-only scripts.")
            }
            _ if self.refuses_write(cmd) => readonly_error(),
            _ if cmd.write
                && let Some(e) = self.refuse_script_write_without_replicas() =>
            {
                e
            }
            _ if let Some(e) = self.refuse_script_call_when_out_of_memory(cmd.name) => e,
            // A script being killed (or stopped by a shutdown) runs no
            // more writes; the engine raises the kill when this call
            // returns. Otherwise the script is marked as having written,
            // which makes it unkillable, as Redis's SCRIPT_WRITE_DIRTY.
            _ if cmd.write && !self.lua.claim_write() => Reply::Nil,
            Handler::Keyspace(_) | Handler::Databases(_) => {
                let mut st = self.state.borrow_mut();
                let db = self.selected.get();
                st.dbs.db_mut(db).from_script = true;
                let reply = self.run_on_databases(&mut st, cmd, args, false);
                st.dbs.db_mut(db).from_script = false;
                reply
            }
            Handler::Node(run) => run(self, args),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_for_binary_search() {
        assert!(COMMANDS.windows(2).all(|w| w[0].name < w[1].name));
    }

    #[test]
    fn lookup_ignores_case_and_knows_only_the_table() {
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"no-such-command").is_none());
        assert!(lookup(b"a-name-longer-than-sixteen").is_none());
    }

    #[test]
    fn only_keyspace_handlers_write() {
        for cmd in COMMANDS.iter().filter(|c| c.write) {
            assert!(
                matches!(cmd.handler, Handler::Keyspace(_) | Handler::Databases(_)),
                "{}",
                cmd.name
            );
        }
    }
}
