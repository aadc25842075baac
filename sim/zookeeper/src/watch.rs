//! Watches, as ZooKeeper's two `WatchManager`s keep them, per connection (a
//! session that reconnects sets them again with `setWatches`): data
//! watches (left by `exists` and `getData`) and child watches (left by
//! `getChildren`), one-shot; and the persistent ones `addWatch` leaves in
//! both, which stay, and which, when recursive, also fire for every node
//! below (but never for a change of children).
//!
//! A connection has one mode per path and manager: the last watch set
//! there decides it, so a one-shot watch set on a persistently watched path
//! makes it one-shot, as in ZooKeeper.
//!
//! Which operation fires which: a create fires the node's data watches
//! (`NodeCreated`) and its parent's child watches (`NodeChildrenChanged`);
//! a delete fires the node's data and child watches (`NodeDeleted`, once
//! per connection) and its parent's child watches; a setData fires the
//! node's data watches (`NodeDataChanged`).

use std::collections::BTreeMap;

use zkproto::codes::EventType;
use zkproto::path;
use zkproto::records::SetWatches2;

use crate::tree::Tree;

/// A connection's number on its server.
pub type ConnId = u64;

/// Which watches of a path a change fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Data watches.
    Data,
    /// Child watches.
    Child,
    /// Both, each connection told once (a delete).
    Both,
}

/// A change's effect on the watches of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// The path.
    pub path: String,
    /// The event sent.
    pub event: EventType,
    /// The watches it fires.
    pub which: Which,
}

impl Trigger {
    /// Fires `path`'s data watches.
    pub fn data(path: &str, event: EventType) -> Trigger {
        Trigger {
            path: path.to_string(),
            event,
            which: Which::Data,
        }
    }

    /// Fires `path`'s child watches.
    pub fn child(path: &str, event: EventType) -> Trigger {
        Trigger {
            path: path.to_string(),
            event,
            which: Which::Child,
        }
    }

    /// `path` was deleted: its data and child watches fire.
    pub fn deleted(path: &str) -> Trigger {
        Trigger {
            path: path.to_string(),
            event: EventType::NodeDeleted,
            which: Which::Both,
        }
    }
}

/// How a watch behaves when it fires (`WatcherMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One-shot.
    Standard,
    /// Stays after firing.
    Persistent,
    /// Stays, and fires for every node below too (no child events).
    Recursive,
}

impl Mode {
    /// The mode `addWatch` asks for (0: persistent, 1: recursive).
    pub fn from_add_watch(mode: i32) -> Option<Mode> {
        match mode {
            0 => Some(Mode::Persistent),
            1 => Some(Mode::Recursive),
            _ => None,
        }
    }
}

type Table = BTreeMap<String, BTreeMap<ConnId, Mode>>;

/// A notification for one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The connection.
    pub conn: ConnId,
    /// What happened.
    pub event: EventType,
    /// To which node.
    pub path: String,
}

/// Every watch of a server.
#[derive(Debug, Default, Clone)]
pub struct Watches {
    data: Table,
    child: Table,
}

impl Watches {
    /// Leaves a data watch (from `exists` or `getData`).
    pub fn add_data(&mut self, path: &str, conn: ConnId) {
        set(&mut self.data, path, conn, Mode::Standard);
    }

    /// Leaves a child watch (from `getChildren`).
    pub fn add_child(&mut self, path: &str, conn: ConnId) {
        set(&mut self.child, path, conn, Mode::Standard);
    }

    /// Leaves a persistent watch (`addWatch`), in both managers.
    pub fn add_persistent(&mut self, path: &str, conn: ConnId, mode: Mode) {
        set(&mut self.data, path, conn, mode);
        set(&mut self.child, path, conn, mode);
    }

    /// Fires the watches `trigger` names; one-shot ones go.
    pub fn fire(&mut self, trigger: &Trigger) -> Vec<Notice> {
        let mut conns: Vec<ConnId> = Vec::new();
        if matches!(trigger.which, Which::Data | Which::Both) {
            conns = fire_in(&mut self.data, &trigger.path, trigger.event);
        }
        if matches!(trigger.which, Which::Child | Which::Both) {
            // A delete tells a connection once, though both managers fire.
            for conn in fire_in(&mut self.child, &trigger.path, trigger.event) {
                if !conns.contains(&conn) {
                    conns.push(conn);
                }
            }
        }
        conns
            .into_iter()
            .map(|conn| Notice {
                conn,
                event: trigger.event,
                path: trigger.path.clone(),
            })
            .collect()
    }

    /// Whether `conn` has a watch on `path` of `kind` (1: child, 2: data,
    /// 3: either), as `checkWatches` asks.
    pub fn has(&self, path: &str, kind: i32, conn: ConnId) -> bool {
        let on = |map: &Table| map.get(path).is_some_and(|c| c.contains_key(&conn));
        match kind {
            1 => on(&self.child),
            2 => on(&self.data),
            3 => on(&self.child) || on(&self.data),
            _ => false,
        }
    }

    /// Removes `conn`'s watches on `path` of `kind` (as [`Watches::has`]);
    /// false when there were none (`removeWatches`).
    pub fn remove(&mut self, path: &str, kind: i32, conn: ConnId) -> bool {
        let off = |map: &mut Table| {
            let Some(conns) = map.get_mut(path) else {
                return false;
            };
            let removed = conns.remove(&conn).is_some();
            if conns.is_empty() {
                map.remove(path);
            }
            removed
        };
        match kind {
            1 => off(&mut self.child),
            2 => off(&mut self.data),
            3 => {
                let child = off(&mut self.child);
                off(&mut self.data) || child
            }
            _ => false,
        }
    }

    /// Forgets a closed connection's watches.
    pub fn remove_conn(&mut self, conn: ConnId) {
        for map in [&mut self.data, &mut self.child] {
            map.retain(|_, conns| {
                conns.remove(&conn);
                !conns.is_empty()
            });
        }
    }

    /// How many watches a connection has (data and child).
    pub fn count(&self, conn: ConnId) -> usize {
        self.data
            .values()
            .chain(self.child.values())
            .filter(|c| c.contains_key(&conn))
            .count()
    }

    /// `setWatches` (and `setWatches2`) after a reconnect: each one-shot
    /// watch whose node changed after `relative_zxid` (the last zxid the
    /// client saw) fires at once, the others are set again, and so are
    /// the persistent ones (`DataTree.setWatches`).
    pub fn set_again(&mut self, tree: &Tree, request: &SetWatches2, conn: ConnId) -> Vec<Notice> {
        let mut fired = Vec::new();
        let mut fire = |event, path: &str| {
            fired.push(Notice {
                conn,
                event,
                path: path.to_string(),
            })
        };
        for path in &request.data_watches {
            match tree.get(path) {
                None => fire(EventType::NodeDeleted, path),
                Some(n) if n.stat.mzxid > request.relative_zxid => {
                    fire(EventType::NodeDataChanged, path)
                }
                Some(_) => self.add_data(path, conn),
            }
        }
        for path in &request.exist_watches {
            match tree.get(path) {
                Some(_) => fire(EventType::NodeCreated, path),
                None => self.add_data(path, conn),
            }
        }
        for path in &request.child_watches {
            match tree.get(path) {
                None => fire(EventType::NodeDeleted, path),
                Some(n) if n.stat.pzxid > request.relative_zxid => {
                    fire(EventType::NodeChildrenChanged, path)
                }
                Some(_) => self.add_child(path, conn),
            }
        }
        for path in &request.persistent_watches {
            self.add_persistent(path, conn, Mode::Persistent);
        }
        for path in &request.persistent_recursive_watches {
            self.add_persistent(path, conn, Mode::Recursive);
        }
        fired
    }
}

fn set(table: &mut Table, path: &str, conn: ConnId, mode: Mode) {
    table
        .entry(path.to_string())
        .or_default()
        .insert(conn, mode);
}

/// `WatchManager.triggerWatch`: the path's own watches, then the recursive
/// ones of its ancestors (which never fire for a change of children).
fn fire_in(table: &mut Table, changed: &str, event: EventType) -> Vec<ConnId> {
    let mut fired: Vec<ConnId> = Vec::new();
    let mut at = Some(changed);
    let mut at_parent = false;
    while let Some(local) = at {
        if let Some(conns) = table.get_mut(local) {
            conns.retain(|conn, mode| {
                let fires = match mode {
                    Mode::Recursive => event != EventType::NodeChildrenChanged,
                    _ => !at_parent,
                };
                if fires && !fired.contains(conn) {
                    fired.push(*conn);
                }
                !(fires && *mode == Mode::Standard)
            });
            if conns.is_empty() {
                table.remove(local);
            }
        }
        at = path::parent(local);
        at_parent = true;
    }
    fired
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_fires_once() {
        let mut watches = Watches::default();
        watches.add_data("/a", 1);
        let trigger = Trigger::data("/a", EventType::NodeDataChanged);
        assert_eq!(watches.fire(&trigger).len(), 1);
        assert!(watches.fire(&trigger).is_empty());
    }

    #[test]
    fn a_delete_tells_a_connection_with_both_watches_once() {
        let mut watches = Watches::default();
        watches.add_data("/a", 1);
        watches.add_child("/a", 1);
        watches.add_child("/a", 2);
        let notices = watches.fire(&Trigger::deleted("/a"));
        let conns: Vec<ConnId> = notices.iter().map(|n| n.conn).collect();
        assert_eq!(conns, [1, 2]);
        assert!(notices.iter().all(|n| n.event == EventType::NodeDeleted));
    }

    #[test]
    fn removing_a_watch_of_one_kind_leaves_the_other() {
        let mut watches = Watches::default();
        watches.add_data("/a", 1);
        watches.add_child("/a", 1);
        assert!(watches.remove("/a", 1, 1));
        assert!(!watches.has("/a", 1, 1));
        assert!(watches.has("/a", 3, 1));
        assert!(!watches.remove("/a", 1, 1));
        assert!(watches.remove("/a", 3, 1));
        assert_eq!(watches.count(1), 0);
    }

    #[test]
    fn a_persistent_watch_stays_and_a_recursive_one_sees_below_but_not_children() {
        let mut watches = Watches::default();
        watches.add_persistent("/a", 1, Mode::Persistent);
        watches.add_persistent("/", 2, Mode::Recursive);
        let changed = Trigger::data("/a", EventType::NodeDataChanged);
        let conns = |n: Vec<Notice>| n.iter().map(|n| n.conn).collect::<Vec<_>>();
        assert_eq!(conns(watches.fire(&changed)), [1, 2]);
        assert_eq!(conns(watches.fire(&changed)), [1, 2]);
        let kids = Trigger::child("/a", EventType::NodeChildrenChanged);
        assert_eq!(conns(watches.fire(&kids)), [1]);
        let below = Trigger::data("/a/b", EventType::NodeCreated);
        assert_eq!(conns(watches.fire(&below)), [2]);
        // A one-shot watch set on the path makes that path's watch one-shot.
        watches.add_data("/a", 1);
        assert_eq!(conns(watches.fire(&changed)), [1, 2]);
        assert_eq!(conns(watches.fire(&changed)), [2]);
    }

    #[test]
    fn a_closed_connections_watches_are_forgotten() {
        let mut watches = Watches::default();
        watches.add_data("/a", 1);
        watches.add_child("/b", 1);
        watches.remove_conn(1);
        assert_eq!(watches.count(1), 0);
    }

    #[test]
    fn set_watches_fires_what_changed_since_and_keeps_the_rest() {
        let tree = Tree::new();
        let mut watches = Watches::default();
        let request = SetWatches2 {
            relative_zxid: 0,
            data_watches: vec!["/zookeeper".into(), "/gone".into()],
            exist_watches: vec!["/zookeeper/quota".into(), "/later".into()],
            child_watches: vec!["/".into()],
            ..SetWatches2::default()
        };
        let fired = watches.set_again(&tree, &request, 3);
        let events: Vec<(EventType, &str)> =
            fired.iter().map(|n| (n.event, n.path.as_str())).collect();
        assert_eq!(
            events,
            [
                (EventType::NodeDeleted, "/gone"),
                (EventType::NodeCreated, "/zookeeper/quota"),
            ]
        );
        assert_eq!(watches.count(3), 3);
    }
}
