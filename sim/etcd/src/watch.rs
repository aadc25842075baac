//! One client's watch stream: many watchers multiplexed on one gRPC
//! stream, as etcd serves them.
//!
//! A watcher first gets the events it asked for from the past (from its
//! start revision), then every new one, each revision in its own
//! response, with `prev_kv` and the PUT/DELETE filters applied.

use crate::keys::KeyRange;
use crate::member::{Batch, Member};
use etcdproto::etcdserverpb::watch_create_request::FilterType;
use etcdproto::etcdserverpb::watch_request::RequestUnion;
use etcdproto::etcdserverpb::{WatchCreateRequest, WatchRequest, WatchResponse};
use etcdproto::mvccpb::Event;
use etcdproto::mvccpb::event::EventType;
use std::collections::BTreeMap;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tonic::Status;

/// What the stream's task sends to the client.
pub type Outbox = mpsc::UnboundedSender<Result<WatchResponse, Status>>;

/// The watchers of one stream, by watch ID.
pub struct WatchStream {
    member: Member,
    out: Outbox,
    watchers: BTreeMap<i64, (u64, JoinHandle<()>)>,
    next_id: i64,
}

impl WatchStream {
    /// A stream of `member` whose responses go to `out`.
    pub fn new(member: Member, out: Outbox) -> WatchStream {
        WatchStream {
            member,
            out,
            watchers: BTreeMap::new(),
            next_id: 0,
        }
    }

    /// Handles one request from the client.
    pub fn handle(&mut self, req: WatchRequest) {
        match req.request_union {
            Some(RequestUnion::CreateRequest(c)) => self.create(c),
            Some(RequestUnion::CancelRequest(c)) => self.cancel(c.watch_id),
            Some(RequestUnion::ProgressRequest(_)) => {
                // A progress report names no watcher.
                self.send(WatchResponse {
                    header: Some(self.member.header()),
                    watch_id: -1,
                    ..WatchResponse::default()
                });
            }
            None => {}
        }
    }

    fn send(&self, resp: WatchResponse) {
        let _ = self.out.send(Ok(resp));
    }

    fn fresh_id(&mut self) -> i64 {
        while self.watchers.contains_key(&self.next_id) {
            self.next_id += 1;
        }
        self.next_id
    }

    fn create(&mut self, c: WatchCreateRequest) {
        let id = if c.watch_id > 0 {
            c.watch_id
        } else {
            self.fresh_id()
        };
        let range = KeyRange::new(&c.key, &c.range_end);
        let header = Some(self.member.header());
        match self.member.subscribe(range, c.start_revision) {
            Err(compacted) => {
                self.send(WatchResponse {
                    header,
                    watch_id: id,
                    created: true,
                    ..WatchResponse::default()
                });
                self.send(WatchResponse {
                    header,
                    watch_id: id,
                    canceled: true,
                    compact_revision: compacted,
                    cancel_reason: crate::errors::compacted().message().into(),
                    ..WatchResponse::default()
                });
            }
            Ok(sub) => {
                self.send(WatchResponse {
                    header,
                    watch_id: id,
                    created: true,
                    ..WatchResponse::default()
                });
                let view = View::new(&c);
                for (rev, events) in by_revision(sub.history) {
                    view.send(&self.out, &self.member, id, rev, events);
                }
                let member = self.member.clone();
                let out = self.out.clone();
                let mut feed = sub.feed;
                let task = tokio::spawn(async move {
                    while let Some((rev, events)) = feed.recv().await {
                        if !view.send(&out, &member, id, rev, events) {
                            return;
                        }
                    }
                });
                self.watchers.insert(id, (sub.key, task));
            }
        }
    }

    fn cancel(&mut self, id: i64) {
        if let Some((key, task)) = self.watchers.remove(&id) {
            task.abort();
            self.member.unsubscribe(key);
            self.send(WatchResponse {
                header: Some(self.member.header()),
                watch_id: id,
                canceled: true,
                ..WatchResponse::default()
            });
        }
    }
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        for (key, task) in self.watchers.values() {
            task.abort();
            self.member.unsubscribe(*key);
        }
    }
}

/// How one watcher wants its events.
#[derive(Debug, Clone, Copy)]
struct View {
    /// The revision the watch starts at: a watch may start in the future.
    from: i64,
    prev_kv: bool,
    no_put: bool,
    no_delete: bool,
}

impl View {
    fn new(c: &WatchCreateRequest) -> View {
        View {
            from: c.start_revision,
            prev_kv: c.prev_kv,
            no_put: c.filters.contains(&(FilterType::Noput as i32)),
            no_delete: c.filters.contains(&(FilterType::Nodelete as i32)),
        }
    }

    /// Sends one revision's events; false once the client is gone.
    fn send(&self, out: &Outbox, member: &Member, id: i64, rev: i64, events: Vec<Event>) -> bool {
        if rev < self.from {
            return !out.is_closed();
        }
        let events: Vec<Event> = events
            .into_iter()
            .filter(|e| {
                let put = e.r#type == EventType::Put as i32;
                !(put && self.no_put || !put && self.no_delete)
            })
            .map(|mut e| {
                if !self.prev_kv {
                    e.prev_kv = None;
                }
                e
            })
            .collect();
        if events.is_empty() {
            return !out.is_closed();
        }
        let mut header = member.header();
        header.revision = rev;
        out.send(Ok(WatchResponse {
            header: Some(header),
            watch_id: id,
            events,
            ..WatchResponse::default()
        }))
        .is_ok()
    }
}

/// Groups past events by their revision, oldest first.
fn by_revision(events: Vec<Event>) -> Vec<Batch> {
    let mut out: Vec<Batch> = Vec::new();
    for e in events {
        let rev = e.kv.as_ref().map_or(0, |kv| kv.mod_revision);
        match out.last_mut() {
            Some((r, batch)) if *r == rev => batch.push(e),
            _ => out.push((rev, vec![e])),
        }
    }
    out
}
