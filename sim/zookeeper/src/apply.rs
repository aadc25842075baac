//! Applying a transaction to the tree, as ZooKeeper's `DataTree.processTxn`
//! does on every member: a pure function of the tree and the transaction,
//! which returns what a client is answered, the watches it fires and the
//! changes observers are told of.

use zkproto::codes::{ErrorCode, EventType};
use zkproto::path;
use zkproto::records::Stat;

use crate::tree::{Node, StoredStat, Tree};
use crate::txn::{Txn, TxnKind};
use crate::watch::Trigger;

/// One applied change to one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The transaction's zxid.
    pub zxid: i64,
    /// The node.
    pub path: String,
    /// What happened to it.
    pub kind: ChangeKind,
}

/// What happened to a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// It was created, with this data, owned by this session (0: not
    /// ephemeral).
    Created {
        /// Its data (`None`: null).
        data: Option<Vec<u8>>,
        /// Its session if ephemeral, else 0.
        ephemeral_owner: i64,
    },
    /// Its data was set.
    DataSet {
        /// The new data.
        data: Option<Vec<u8>>,
    },
    /// It was deleted; `by_expiry` when its session expired.
    Deleted {
        /// Whether its session's expiry deleted it.
        by_expiry: bool,
    },
}

/// What a transaction did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Applied {
    /// The error the client is answered (0: none).
    pub err: i32,
    /// A created node's path.
    pub path: Option<String>,
    /// The stat a create, setData or setACL answers with.
    pub stat: Option<Stat>,
    /// A `multi`'s result for each of its operations (their triggers and
    /// changes are the multi's).
    pub multi: Vec<Applied>,
    /// The watches to fire, in order.
    pub triggers: Vec<Trigger>,
    /// The changes, in order.
    pub changes: Vec<Change>,
}

/// Applies `txn` to `tree`; the tree's last zxid becomes the txn's.
pub fn apply(tree: &mut Tree, txn: &Txn) -> Applied {
    let mut out = Applied::default();
    if let Err(err) = apply_kind(tree, txn, &txn.kind, &mut out) {
        out.err = err.code();
    }
    tree.last_zxid = tree.last_zxid.max(txn.zxid);
    out
}

fn apply_kind(
    tree: &mut Tree,
    txn: &Txn,
    kind: &TxnKind,
    out: &mut Applied,
) -> Result<(), ErrorCode> {
    match kind {
        TxnKind::CreateSession { .. } => Ok(()),
        TxnKind::CloseSession { by_expiry } => {
            for path in tree.ephemerals_of(txn.session_id) {
                delete(tree, txn.zxid, &path, *by_expiry, out)?;
            }
            Ok(())
        }
        TxnKind::Create {
            path,
            data,
            acl,
            ephemeral_owner,
            parent_cversion,
        } => {
            let parent_path = path::parent(path).ok_or(ErrorCode::NoNode)?;
            let name = path::name(path);
            let parent = tree.get_mut(parent_path).ok_or(ErrorCode::NoNode)?;
            if parent.children.contains(name) {
                return Err(ErrorCode::NodeExists);
            }
            if *parent_cversion > parent.stat.cversion {
                parent.stat.cversion = *parent_cversion;
                parent.stat.pzxid = txn.zxid;
            }
            parent.children.insert(name);
            let stat = StoredStat {
                czxid: txn.zxid,
                mzxid: txn.zxid,
                ctime: txn.time_ms,
                mtime: txn.time_ms,
                ephemeral_owner: *ephemeral_owner,
                pzxid: txn.zxid,
                ..StoredStat::default()
            };
            let node = Node::new(data.clone(), acl.clone(), stat);
            out.stat = Some(node.client_stat());
            out.path = Some(path.clone());
            tree.insert(path, node);
            out.triggers
                .push(Trigger::data(path, EventType::NodeCreated));
            out.triggers
                .push(Trigger::child(parent_path, EventType::NodeChildrenChanged));
            out.changes.push(Change {
                zxid: txn.zxid,
                path: path.clone(),
                kind: ChangeKind::Created {
                    data: data.clone(),
                    ephemeral_owner: ephemeral_owner.max(&0).to_owned(),
                },
            });
            Ok(())
        }
        TxnKind::Delete { path } => delete(tree, txn.zxid, path, false, out),
        TxnKind::SetData {
            path,
            data,
            version,
        } => {
            let node = tree.get_mut(path).ok_or(ErrorCode::NoNode)?;
            node.data = data.clone();
            node.stat.version = *version;
            node.stat.mzxid = txn.zxid;
            node.stat.mtime = txn.time_ms;
            out.stat = Some(node.client_stat());
            out.triggers
                .push(Trigger::data(path, EventType::NodeDataChanged));
            out.changes.push(Change {
                zxid: txn.zxid,
                path: path.clone(),
                kind: ChangeKind::DataSet { data: data.clone() },
            });
            Ok(())
        }
        TxnKind::SetAcl {
            path,
            acl,
            aversion,
        } => {
            let node = tree.get_mut(path).ok_or(ErrorCode::NoNode)?;
            node.acl = acl.clone();
            node.stat.aversion = *aversion;
            out.stat = Some(node.client_stat());
            Ok(())
        }
        TxnKind::Check { .. } => Ok(()),
        TxnKind::Error { err } => Err(ErrorCode::from_code(*err).unwrap_or(ErrorCode::SystemError)),
        TxnKind::Multi(kinds) => {
            for kind in kinds {
                let mut one = Applied::default();
                if let Err(err) = apply_kind(tree, txn, kind, &mut one) {
                    one.err = err.code();
                }
                out.triggers.append(&mut one.triggers);
                out.changes.append(&mut one.changes);
                out.multi.push(one);
            }
            Ok(())
        }
    }
}

fn delete(
    tree: &mut Tree,
    zxid: i64,
    path: &str,
    by_expiry: bool,
    out: &mut Applied,
) -> Result<(), ErrorCode> {
    let parent_path = path::parent(path).ok_or(ErrorCode::NoNode)?;
    let parent = tree.get_mut(parent_path).ok_or(ErrorCode::NoNode)?;
    // Deletes leave the stored cversion alone (the shown one still moves:
    // it counts children gone).
    parent.children.remove(path::name(path));
    if zxid > parent.stat.pzxid {
        parent.stat.pzxid = zxid;
    }
    tree.remove(path).ok_or(ErrorCode::NoNode)?;
    out.triggers.push(Trigger::deleted(path));
    out.triggers
        .push(Trigger::child(parent_path, EventType::NodeChildrenChanged));
    out.changes.push(Change {
        zxid,
        path: path.to_string(),
        kind: ChangeKind::Deleted { by_expiry },
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkproto::records::open_acl_unsafe;

    fn txn(zxid: i64, kind: TxnKind) -> Txn {
        Txn {
            zxid,
            session_id: 7,
            time_ms: 1000 * zxid,
            kind,
        }
    }

    fn create(path: &str, owner: i64, parent_cversion: i32) -> TxnKind {
        TxnKind::Create {
            path: path.into(),
            data: None,
            acl: open_acl_unsafe(),
            ephemeral_owner: owner,
            parent_cversion,
        }
    }

    #[test]
    fn a_create_sets_the_parents_cversion_and_pzxid_and_fires_both_watches() {
        let mut tree = Tree::new();
        let applied = apply(&mut tree, &txn(2, create("/a", 0, 1)));
        assert_eq!(applied.err, 0);
        let root = tree.get("/").map(Node::client_stat);
        assert_eq!(
            root.map(|s| (s.cversion, s.pzxid, s.num_children)),
            Some((0, 2, 2))
        );
        assert_eq!(applied.triggers.len(), 2);
        assert_eq!(tree.last_zxid, 2);
    }

    #[test]
    fn an_error_transaction_changes_nothing_but_the_last_zxid() {
        let mut tree = Tree::new();
        let before = tree.clone();
        let applied = apply(&mut tree, &txn(3, TxnKind::Error { err: -110 }));
        assert_eq!(applied.err, -110);
        assert_eq!(tree.last_zxid, 3);
        tree.last_zxid = 0;
        assert_eq!(tree, before);
    }

    #[test]
    fn closing_a_session_deletes_its_ephemeral_nodes_only() {
        let mut tree = Tree::new();
        apply(&mut tree, &txn(2, create("/mine", 7, 1)));
        apply(&mut tree, &txn(3, create("/theirs", 8, 2)));
        let applied = apply(
            &mut tree,
            &txn(4, TxnKind::CloseSession { by_expiry: true }),
        );
        assert!(tree.get("/mine").is_none());
        assert!(tree.get("/theirs").is_some());
        assert_eq!(
            applied.changes,
            vec![Change {
                zxid: 4,
                path: "/mine".into(),
                kind: ChangeKind::Deleted { by_expiry: true }
            }]
        );
    }
}
