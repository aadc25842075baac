//! Preparing a write: a request checked against the tree and turned into a
//! transaction, as ZooKeeper's `PrepRequestProcessor` does on the leader.
//! Every check that fails becomes an error transaction (it still takes a
//! zxid), in ZooKeeper's order, so the error a client gets for a request
//! that is wrong twice over is ZooKeeper's.
//!
//! Prep reads the tree and never changes it: applying is
//! [`crate::apply`]'s, on every member alike.

use zkproto::codes::{CreateMode, ErrorCode, OpCode, perms};
use zkproto::path;
use zkproto::records::{
    Acl, CheckVersionRequest, CreateRequest, DeleteRequest, SetAclRequest, SetDataRequest,
};

use crate::apply::apply;
use crate::tree::{CONTAINER_OWNER, Node, Tree};
use crate::txn::{Txn, TxnKind};

/// A write request, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// `create`, `create2` or `createContainer` (`op` says which).
    Create {
        /// Which create.
        op: OpCode,
        /// The request.
        request: CreateRequest,
    },
    /// `createTTL`: the create and its time to live.
    CreateTtl {
        /// The request.
        request: CreateRequest,
        /// Its time to live, ms.
        ttl_ms: i64,
    },
    /// `delete`.
    Delete(DeleteRequest),
    /// `setData`.
    SetData(SetDataRequest),
    /// `setACL`.
    SetAcl(SetAclRequest),
    /// `deleteContainer`: the server's own removal of an empty container.
    DeleteContainer {
        /// The container.
        path: String,
    },
    /// `check` (inside a `multi`).
    Check(CheckVersionRequest),
    /// `multi`: its operations, each with its own op code.
    Multi(Vec<(OpCode, Write)>),
    /// A new session with its negotiated timeout.
    CreateSession {
        /// The timeout, ms.
        timeout_ms: i32,
    },
    /// The end of the session (closed by its client, or expired).
    CloseSession {
        /// Whether it expired.
        by_expiry: bool,
    },
}

/// Turns `write`, from `session_id`, into what its transaction does.
pub fn prep(tree: &Tree, session_id: i64, write: &Write) -> TxnKind {
    let prepared = match write {
        Write::Create { op, request } => create(tree, session_id, *op, request, None),
        Write::CreateTtl { request, ttl_ms } => {
            create(tree, session_id, OpCode::CreateTtl, request, Some(*ttl_ms))
        }
        Write::Delete(request) => delete(tree, request),
        Write::SetData(request) => set_data(tree, request),
        Write::SetAcl(request) => set_acl(tree, request),
        Write::DeleteContainer { path } => delete_container(tree, path),
        Write::Check(request) => check(tree, request),
        Write::Multi(ops) => Ok(multi(tree, session_id, ops)),
        Write::CreateSession { timeout_ms } => Ok(TxnKind::CreateSession {
            timeout_ms: *timeout_ms,
        }),
        Write::CloseSession { by_expiry } => Ok(TxnKind::CloseSession {
            by_expiry: *by_expiry,
        }),
    };
    prepared.unwrap_or_else(|err| TxnKind::Error { err: err.code() })
}

fn create(
    tree: &Tree,
    session_id: i64,
    op: OpCode,
    request: &CreateRequest,
    ttl_ms: Option<i64>,
) -> Result<TxnKind, ErrorCode> {
    let mode = CreateMode::from_code(request.flags).ok_or(ErrorCode::BadArguments)?;
    let is_ttl = matches!(
        mode,
        CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
    );
    // TTL nodes need `zookeeper.extendedTypesEnabled`, off by default.
    if is_ttl {
        return Err(ErrorCode::Unimplemented);
    }
    if ttl_ms.is_some_and(|ttl| ttl >= 0) {
        return Err(ErrorCode::BadArguments);
    }
    let Some(last_slash) = request.path.rfind('/') else {
        return Err(ErrorCode::BadArguments);
    };
    if request.path.contains('\0') {
        return Err(ErrorCode::BadArguments);
    }
    let acl = fixup_acl(&request.acl)?;
    let parent_path = parent_key(&request.path[..last_slash]);
    let parent = tree.get(parent_path).ok_or(ErrorCode::NoNode)?;
    check_acl(parent, perms::CREATE)?;
    let path = if mode.is_sequential() {
        path::sequential(&request.path, parent.stat.cversion)
    } else {
        request.path.clone()
    };
    path::validate(&path, false).map_err(|_| ErrorCode::BadArguments)?;
    if tree.get(&path).is_some() {
        return Err(ErrorCode::NodeExists);
    }
    if parent.ephemeral_session().is_some() {
        return Err(ErrorCode::NoChildrenForEphemerals);
    }
    let ephemeral_owner = if op == OpCode::CreateContainer {
        CONTAINER_OWNER
    } else if mode.is_ephemeral() {
        session_id
    } else {
        0
    };
    Ok(TxnKind::Create {
        path,
        data: request.data.0.clone(),
        acl,
        ephemeral_owner,
        parent_cversion: parent.stat.cversion.wrapping_add(1),
    })
}

fn check(tree: &Tree, request: &CheckVersionRequest) -> Result<TxnKind, ErrorCode> {
    path::validate(&request.path, false).map_err(|_| ErrorCode::BadArguments)?;
    let node = tree.get(&request.path).ok_or(ErrorCode::NoNode)?;
    check_acl(node, perms::READ)?;
    check_version(node.stat.version, request.version)?;
    Ok(TxnKind::Check {
        path: request.path.clone(),
    })
}

/// Each operation is prepared against the tree as the ones before it
/// left it (on a copy); the first that fails fails them all.
fn multi(tree: &Tree, session_id: i64, ops: &[(OpCode, Write)]) -> TxnKind {
    let mut scratch = tree.clone();
    let mut kinds = Vec::with_capacity(ops.len());
    for (i, (_, write)) in ops.iter().enumerate() {
        let kind = match write {
            Write::Multi(_) => TxnKind::Error {
                err: ErrorCode::MarshallingError.code(),
            },
            write => prep(&scratch, session_id, write),
        };
        if let TxnKind::Error { err } = kind {
            let mut failed: Vec<TxnKind> = (0..i).map(|_| TxnKind::Error { err: 0 }).collect();
            failed.push(TxnKind::Error { err });
            failed.extend((i + 1..ops.len()).map(|_| TxnKind::Error {
                err: ErrorCode::RuntimeInconsistency.code(),
            }));
            return TxnKind::Multi(failed);
        }
        let txn = Txn {
            zxid: scratch.last_zxid + 1,
            session_id,
            time_ms: 0,
            kind: kind.clone(),
        };
        apply(&mut scratch, &txn);
        kinds.push(kind);
    }
    TxnKind::Multi(kinds)
}

fn delete_container(tree: &Tree, path: &str) -> Result<TxnKind, ErrorCode> {
    let parent_path = parent_of_checked(path)?;
    let node = tree.get(path).ok_or(ErrorCode::NoNode)?;
    if !node.children.is_empty() {
        return Err(ErrorCode::NotEmpty);
    }
    // ZooKeeper's guard against deleting a session's node this way.
    if node.ephemeral_session().is_some() {
        return Err(ErrorCode::BadVersion);
    }
    tree.get(parent_path).ok_or(ErrorCode::NoNode)?;
    Ok(TxnKind::Delete {
        path: path.to_string(),
    })
}

fn delete(tree: &Tree, request: &DeleteRequest) -> Result<TxnKind, ErrorCode> {
    let path = &request.path;
    let parent_path = parent_of_checked(path)?;
    let parent = tree.get(parent_path).ok_or(ErrorCode::NoNode)?;
    check_acl(parent, perms::DELETE)?;
    let node = tree.get(path).ok_or(ErrorCode::NoNode)?;
    check_version(node.stat.version, request.version)?;
    if !node.children.is_empty() {
        return Err(ErrorCode::NotEmpty);
    }
    Ok(TxnKind::Delete { path: path.clone() })
}

fn set_data(tree: &Tree, request: &SetDataRequest) -> Result<TxnKind, ErrorCode> {
    path::validate(&request.path, false).map_err(|_| ErrorCode::BadArguments)?;
    let node = tree.get(&request.path).ok_or(ErrorCode::NoNode)?;
    check_acl(node, perms::WRITE)?;
    let version = check_version(node.stat.version, request.version)?;
    Ok(TxnKind::SetData {
        path: request.path.clone(),
        data: request.data.0.clone(),
        version,
    })
}

fn set_acl(tree: &Tree, request: &SetAclRequest) -> Result<TxnKind, ErrorCode> {
    path::validate(&request.path, false).map_err(|_| ErrorCode::BadArguments)?;
    let acl = fixup_acl(&request.acl)?;
    let node = tree.get(&request.path).ok_or(ErrorCode::NoNode)?;
    check_acl(node, perms::ADMIN)?;
    let aversion = check_version(node.stat.aversion, request.version)?;
    Ok(TxnKind::SetAcl {
        path: request.path.clone(),
        acl,
        aversion,
    })
}

/// The tree's key for a parent path: ZooKeeper's root is the empty string
/// before the first `/`.
fn parent_key(parent: &str) -> &str {
    if parent.is_empty() { "/" } else { parent }
}

/// The parent of a node to delete, refusing the nodes ZooKeeper keeps for
/// itself (`getParentPathAndValidate`).
fn parent_of_checked(path: &str) -> Result<&str, ErrorCode> {
    let special = ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"];
    match path.rfind('/') {
        Some(at) if !path.contains('\0') && !special.contains(&path) => Ok(parent_key(&path[..at])),
        _ => Err(ErrorCode::BadArguments),
    }
}

/// `checkAndIncVersion`: -1 matches any version.
fn check_version(current: i32, expected: i32) -> Result<i32, ErrorCode> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BadVersion);
    }
    Ok(current.wrapping_add(1))
}

/// `fixupACL`: duplicates dropped; an empty list, or an id no provider
/// accepts, is `InvalidACL`. No client here authenticates, so `auth` ids
/// (which stand for the client's own) are refused too.
fn fixup_acl(acl: &[Acl]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<Acl> = Vec::new();
    for entry in acl {
        if !unique.contains(entry) {
            unique.push(entry.clone());
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    for entry in &unique {
        let id = &entry.id;
        let valid = match id.scheme.as_str() {
            "world" => id.id == "anyone",
            "digest" => id.id.split(':').count() == 2,
            "ip" => !id.id.is_empty(),
            _ => false,
        };
        if !valid {
            return Err(ErrorCode::InvalidAcl);
        }
    }
    Ok(unique)
}

/// `checkACL` for a client with no credentials: only `world:anyone`
/// entries grant anything (an empty ACL grants everything).
pub fn check_acl(node: &Node, perm: i32) -> Result<(), ErrorCode> {
    if node.acl.is_empty() {
        return Ok(());
    }
    let granted = node
        .acl
        .iter()
        .any(|a| a.perms & perm != 0 && a.id.scheme == "world" && a.id.id == "anyone");
    if granted {
        Ok(())
    } else {
        Err(ErrorCode::NoAuth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkproto::Buffer;
    use zkproto::records::open_acl_unsafe;

    const SESSION: i64 = 0x100_0000_0000_0000;

    fn create_request(path: &str, mode: CreateMode) -> Write {
        Write::Create {
            op: OpCode::Create,
            request: CreateRequest {
                path: path.into(),
                data: Buffer(None),
                acl: open_acl_unsafe(),
                flags: mode.code(),
            },
        }
    }

    fn run(tree: &mut Tree, write: &Write) -> TxnKind {
        let kind = prep(tree, SESSION, write);
        let txn = Txn {
            zxid: tree.last_zxid + 1,
            session_id: SESSION,
            time_ms: 0,
            kind: kind.clone(),
        };
        apply(tree, &txn);
        kind
    }

    fn err(code: ErrorCode) -> TxnKind {
        TxnKind::Error { err: code.code() }
    }

    #[test]
    fn creating_twice_is_node_exists_and_without_a_parent_is_no_node() {
        let mut tree = Tree::new();
        run(&mut tree, &create_request("/a", CreateMode::Persistent));
        let again = run(&mut tree, &create_request("/a", CreateMode::Persistent));
        assert_eq!(again, err(ErrorCode::NodeExists));
        let orphan = run(&mut tree, &create_request("/x/y", CreateMode::Persistent));
        assert_eq!(orphan, err(ErrorCode::NoNode));
    }

    #[test]
    fn sequential_names_come_from_the_parents_create_count() {
        let mut tree = Tree::new();
        run(&mut tree, &create_request("/a", CreateMode::Persistent));
        run(&mut tree, &create_request("/a/b", CreateMode::Persistent));
        run(
            &mut tree,
            &Write::Delete(DeleteRequest {
                path: "/a/b".into(),
                version: -1,
            }),
        );
        let seq = run(
            &mut tree,
            &create_request("/a/s-", CreateMode::PersistentSequential),
        );
        assert!(
            matches!(&seq, TxnKind::Create { path, .. } if path == "/a/s-0000000001"),
            "{seq:?}"
        );
    }

    #[test]
    fn ephemeral_nodes_cannot_have_children() {
        let mut tree = Tree::new();
        run(&mut tree, &create_request("/e", CreateMode::Ephemeral));
        let child = run(&mut tree, &create_request("/e/x", CreateMode::Persistent));
        assert_eq!(child, err(ErrorCode::NoChildrenForEphemerals));
    }

    #[test]
    fn a_version_mismatch_is_bad_version_and_a_parent_with_children_not_empty() {
        let mut tree = Tree::new();
        run(&mut tree, &create_request("/a", CreateMode::Persistent));
        run(&mut tree, &create_request("/a/b", CreateMode::Persistent));
        let delete = |version| {
            Write::Delete(DeleteRequest {
                path: "/a".into(),
                version,
            })
        };
        assert_eq!(run(&mut tree, &delete(5)), err(ErrorCode::BadVersion));
        assert_eq!(run(&mut tree, &delete(0)), err(ErrorCode::NotEmpty));
        let set = Write::SetData(SetDataRequest {
            path: "/a".into(),
            data: Buffer(Some(b"x".to_vec())),
            version: 3,
        });
        assert_eq!(run(&mut tree, &set), err(ErrorCode::BadVersion));
    }

    #[test]
    fn the_system_nodes_cannot_be_deleted_and_the_config_node_is_read_only() {
        let mut tree = Tree::new();
        for path in ["/", "/zookeeper", "/zookeeper/config"] {
            let delete = Write::Delete(DeleteRequest {
                path: path.into(),
                version: -1,
            });
            assert_eq!(
                run(&mut tree, &delete),
                err(ErrorCode::BadArguments),
                "{path}"
            );
        }
        let under_config = create_request("/zookeeper/config/x", CreateMode::Persistent);
        assert_eq!(run(&mut tree, &under_config), err(ErrorCode::NoAuth));
    }

    #[test]
    fn ttl_nodes_are_unimplemented_as_on_a_default_server() {
        let tree = Tree::new();
        let write = Write::CreateTtl {
            request: CreateRequest {
                path: "/t".into(),
                data: Buffer(None),
                acl: open_acl_unsafe(),
                flags: CreateMode::PersistentWithTtl.code(),
            },
            ttl_ms: 1000,
        };
        assert_eq!(prep(&tree, SESSION, &write), err(ErrorCode::Unimplemented));
    }

    #[test]
    fn a_multi_sees_its_own_earlier_operations_and_fails_whole() {
        let mut tree = Tree::new();
        let ok = Write::Multi(vec![
            (OpCode::Create, create_request("/m", CreateMode::Persistent)),
            (
                OpCode::Create,
                create_request("/m/c", CreateMode::Persistent),
            ),
        ]);
        let kind = run(&mut tree, &ok);
        assert!(
            matches!(&kind, TxnKind::Multi(k) if k.len() == 2),
            "{kind:?}"
        );
        assert!(tree.get("/m/c").is_some());
        let failing = Write::Multi(vec![
            (OpCode::Create, create_request("/n", CreateMode::Persistent)),
            (OpCode::Create, create_request("/m", CreateMode::Persistent)),
            (OpCode::Create, create_request("/o", CreateMode::Persistent)),
        ]);
        let kind = run(&mut tree, &failing);
        let errs = [
            0,
            ErrorCode::NodeExists.code(),
            ErrorCode::RuntimeInconsistency.code(),
        ];
        assert_eq!(
            kind,
            TxnKind::Multi(errs.map(|err| TxnKind::Error { err }).to_vec())
        );
        assert!(tree.get("/n").is_none());
    }

    #[test]
    fn an_empty_acl_is_invalid() {
        let tree = Tree::new();
        let write = Write::Create {
            op: OpCode::Create,
            request: CreateRequest {
                path: "/a".into(),
                data: Buffer(None),
                acl: Vec::new(),
                flags: 0,
            },
        };
        assert_eq!(prep(&tree, SESSION, &write), err(ErrorCode::InvalidAcl));
    }
}
