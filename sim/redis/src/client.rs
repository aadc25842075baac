//! One connected client, as its commands see it.
//!
//! A client is born with its connection and dies with it. Besides its id
//! and name (`CLIENT ID`, `CLIENT SETNAME`), it carries the channels it
//! subscribed to, the sender through which those channels push messages to
//! its connection, the replication offset `WAIT` waits for, and the switch
//! `CLIENT KILL` throws to end its connection from another client.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use tokio::sync::{Notify, mpsc};

use crate::commands::transactions::Transaction;
use crate::resp::{Protocol, Reply};

/// One connected client's state.
pub(crate) struct Client {
    /// Its `CLIENT ID`, unique on the node.
    pub(crate) id: u64,
    /// Its `CLIENT SETNAME` name, if any.
    pub(crate) name: Option<Vec<u8>>,
    /// The channels it subscribed to.
    pub(crate) subscriptions: BTreeSet<Vec<u8>>,
    /// The patterns it subscribed to (`PSUBSCRIBE`).
    pub(crate) patterns: BTreeSet<Vec<u8>>,
    /// Where published messages for it go (its connection writes them).
    pub(crate) push: mpsc::UnboundedSender<Reply>,
    /// The replication offset after its last keyspace command or script:
    /// what `WAIT` waits for replicas to acknowledge.
    pub(crate) woff: u64,
    /// Thrown by `CLIENT KILL` from another client: the connection ends.
    pub(crate) kill: Rc<KillSwitch>,
    /// Its selected database (`SELECT`), 0 to 15.
    pub(crate) db: usize,
    /// Its open transaction, after `MULTI`.
    pub(crate) multi: Option<Transaction>,
    /// The protocol its replies are encoded in (`HELLO`).
    pub(crate) proto: Protocol,
    /// Whether its replies are sent (`CLIENT REPLY`).
    pub(crate) replies: Replies,
    /// What other clients see of it (`CLIENT LIST`), shared with the node.
    pub(crate) view: Rc<ClientView>,
}

/// What `CLIENT LIST` and `CLIENT INFO` show of a client, kept by the node
/// for every connected client: its connection owns the client itself, so
/// the node's copy of these few fields is brought up to date at each of
/// its commands ([`Client::refresh_view`]), without allocating unless its
/// name changed.
pub(crate) struct ClientView {
    /// Its `CLIENT ID`.
    pub(crate) id: u64,
    /// Its name.
    pub(crate) name: RefCell<Option<Vec<u8>>>,
    /// Its selected database.
    pub(crate) db: Cell<usize>,
    /// Its channels and patterns.
    pub(crate) subscriptions: Cell<(usize, usize)>,
    /// Commands queued in its transaction, if one is open.
    pub(crate) multi: Cell<Option<usize>>,
    /// Its protocol version (2 or 3).
    pub(crate) resp: Cell<u8>,
    /// The command it runs or ran last (`container|sub` for a subcommand).
    pub(crate) command: Cell<&'static str>,
}

/// `CLIENT REPLY`'s modes. Pub/sub pushes (messages and subscription
/// confirmations) are sent whatever the mode, as in Redis 7.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replies {
    /// Every reply is sent.
    On,
    /// No reply is sent (`CLIENT REPLY OFF`).
    Off,
    /// `CLIENT REPLY SKIP` just ran: its reply is dropped, and the next
    /// command's.
    SkipNext,
    /// This command's reply is dropped.
    Skip,
}

impl Client {
    /// Whether the reply of the command that just ran is dropped.
    pub(crate) fn reply_dropped(&self) -> bool {
        matches!(
            self.replies,
            Replies::Off | Replies::SkipNext | Replies::Skip
        )
    }

    /// Moves `SKIP` on after a command, as Redis does after each call: a
    /// skip asked for now applies to the next command only.
    pub(crate) fn after_command(&mut self) {
        self.replies = match self.replies {
            Replies::Skip => Replies::On,
            Replies::SkipNext => Replies::Skip,
            other => other,
        };
    }
}

/// Ends one client's connection from elsewhere on the node (`CLIENT
/// KILL`). As Redis's `freeClient`, it drops the replies the connection
/// has not written yet: the connection looks at it before each write and
/// wakes on it while it waits.
#[derive(Default)]
pub(crate) struct KillSwitch {
    thrown: Cell<bool>,
    wake: Notify,
}

impl KillSwitch {
    /// Ends the connection at its next look.
    pub(crate) fn throw(&self) {
        self.thrown.set(true);
        self.wake.notify_one();
    }

    /// Whether the connection must end.
    pub(crate) fn is_thrown(&self) -> bool {
        self.thrown.get()
    }

    /// Completes once the switch is thrown.
    pub(crate) async fn thrown(&self) {
        while !self.is_thrown() {
            self.wake.notified().await;
        }
    }
}

impl Client {
    /// A client with id `id` whose pushed messages go to `push`.
    pub(crate) fn new(id: u64, push: mpsc::UnboundedSender<Reply>) -> Client {
        Client {
            id,
            name: None,
            subscriptions: BTreeSet::new(),
            patterns: BTreeSet::new(),
            push,
            woff: 0,
            kill: Rc::new(KillSwitch::default()),
            db: 0,
            multi: None,
            proto: Protocol::Resp2,
            replies: Replies::On,
            view: Rc::new(ClientView {
                id,
                name: RefCell::new(None),
                db: Cell::new(0),
                subscriptions: Cell::new((0, 0)),
                multi: Cell::new(None),
                resp: Cell::new(2),
                command: Cell::new("NULL"),
            }),
        }
    }

    /// Brings what the node shows of the client up to date (after each of
    /// its commands; the command itself is set as it starts).
    pub(crate) fn refresh_view(&self) {
        let v = &self.view;
        v.db.set(self.db);
        v.subscriptions
            .set((self.subscriptions.len(), self.patterns.len()));
        v.multi.set(self.multi.as_ref().map(|tx| tx.queued_len()));
        v.resp.set(match self.proto {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        });
        if v.name.borrow().as_ref() != self.name.as_ref() {
            *v.name.borrow_mut() = self.name.clone();
        }
    }

    /// `CLIENT SETNAME` and `HELLO ... SETNAME`: an empty name clears it;
    /// a name with spaces or bytes outside `!`..`~` is refused.
    pub(crate) fn set_name(&mut self, name: &[u8]) -> Result<(), Reply> {
        if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
            return Err(Reply::err(
                "ERR Client names cannot contain spaces, newlines or special characters.",
            ));
        }
        self.name = (!name.is_empty()).then(|| name.to_vec());
        Ok(())
    }

    /// Whether the client is in subscribed mode (subscribed to a channel
    /// or a pattern), where only a few commands are allowed.
    pub(crate) fn is_subscribed(&self) -> bool {
        self.subscription_count() > 0
    }

    /// Its channels and patterns together: the count pub/sub
    /// confirmations carry.
    pub(crate) fn subscription_count(&self) -> usize {
        self.subscriptions.len() + self.patterns.len()
    }
}
