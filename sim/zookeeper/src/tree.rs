//! The data tree: every node with its data, ACL and stat, as ZooKeeper's
//! `DataTree` keeps them, and the stat a client is shown.
//!
//! Two details a client can see are kept as ZooKeeper keeps them:
//!
//! - a node stores how many children were ever *created* under it (its
//!   stored `cversion`, which numbers sequential children), and shows
//!   `2 * creates - children now` (every child still there was created,
//!   every one gone was created and deleted);
//! - children come back in the order of Java's `HashSet<String>` that holds
//!   them ([`JavaStringSet`]), the order a raw `getChildren` returns.

use std::collections::BTreeMap;

use zkproto::records::{Acl, Id, Stat, open_acl_unsafe};

/// The owner that marks a container node (`EphemeralType.CONTAINER`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// A node's stat as the tree stores it (`StatPersisted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoredStat {
    /// The zxid that created it.
    pub czxid: i64,
    /// The zxid that last set its data.
    pub mzxid: i64,
    /// Creation time, ms since the epoch.
    pub ctime: i64,
    /// Last data change, ms since the epoch.
    pub mtime: i64,
    /// Data changes.
    pub version: i32,
    /// Children ever created under it (not what clients see).
    pub cversion: i32,
    /// ACL changes.
    pub aversion: i32,
    /// The owning session, [`CONTAINER_OWNER`] for a container, 0 otherwise.
    pub ephemeral_owner: i64,
    /// The zxid of the last change to its children.
    pub pzxid: i64,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its data; `None` is null, not empty.
    pub data: Option<Vec<u8>>,
    /// Its ACL.
    pub acl: Vec<Acl>,
    /// Its stored stat.
    pub stat: StoredStat,
    /// Its children's names.
    pub children: JavaStringSet,
}

impl Node {
    /// A node with no children.
    pub fn new(data: Option<Vec<u8>>, acl: Vec<Acl>, stat: StoredStat) -> Node {
        Node {
            data,
            acl,
            stat,
            children: JavaStringSet::default(),
        }
    }

    /// The stat a client is shown (`DataNode.copyStat`).
    pub fn client_stat(&self) -> Stat {
        let num_children = self.children.len() as i32;
        let owner = self.stat.ephemeral_owner;
        Stat {
            czxid: self.stat.czxid,
            mzxid: self.stat.mzxid,
            ctime: self.stat.ctime,
            mtime: self.stat.mtime,
            version: self.stat.version,
            cversion: self
                .stat
                .cversion
                .wrapping_mul(2)
                .wrapping_sub(num_children),
            aversion: self.stat.aversion,
            // Containers (and TTL nodes) keep a marker there; clients see 0.
            ephemeral_owner: if owner < 0 { 0 } else { owner },
            data_length: self.data.as_ref().map_or(0, |d| d.len() as i32),
            num_children,
            pzxid: self.stat.pzxid,
        }
    }

    /// Whether it is a container.
    pub fn is_container(&self) -> bool {
        self.stat.ephemeral_owner == CONTAINER_OWNER
    }

    /// The session it belongs to, if it is ephemeral.
    pub fn ephemeral_session(&self) -> Option<i64> {
        (self.stat.ephemeral_owner > 0).then_some(self.stat.ephemeral_owner)
    }
}

/// The whole tree, keyed by path, and the last zxid applied to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    nodes: BTreeMap<String, Node>,
    /// The zxid of the last transaction applied (`lastProcessedZxid`).
    pub last_zxid: i64,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree::new()
    }
}

impl Tree {
    /// The tree of a fresh ZooKeeper 3.8 standalone server: `/`,
    /// `/zookeeper`, `/zookeeper/quota` and `/zookeeper/config`, all at zxid
    /// 0 and time 0 with empty (not null) data; the config node is
    /// read-only with an ACL version of -1.
    pub fn new() -> Tree {
        let plain = || Node::new(Some(Vec::new()), open_acl_unsafe(), StoredStat::default());
        let mut root = plain();
        root.children.insert("zookeeper");
        let mut zookeeper = plain();
        zookeeper.children.insert("quota");
        zookeeper.children.insert("config");
        let read_only = vec![Acl {
            perms: zkproto::codes::perms::READ,
            id: Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }];
        let config = Node::new(
            Some(Vec::new()),
            read_only,
            StoredStat {
                aversion: -1,
                ..StoredStat::default()
            },
        );
        let mut nodes = BTreeMap::new();
        nodes.insert("/".to_string(), root);
        nodes.insert("/zookeeper".to_string(), zookeeper);
        nodes.insert("/zookeeper/quota".to_string(), plain());
        nodes.insert("/zookeeper/config".to_string(), config);
        Tree {
            nodes,
            last_zxid: 0,
        }
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// The node at `path`, to change it.
    pub fn get_mut(&mut self, path: &str) -> Option<&mut Node> {
        self.nodes.get_mut(path)
    }

    /// Adds a node (its parent must exist; apply checks).
    pub fn insert(&mut self, path: &str, node: Node) {
        self.nodes.insert(path.to_string(), node);
    }

    /// Removes a node.
    pub fn remove(&mut self, path: &str) -> Option<Node> {
        self.nodes.remove(path)
    }

    /// The paths of the ephemeral nodes of `session`, in path order.
    pub fn ephemerals_of(&self, session: i64) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.ephemeral_session() == Some(session))
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// The containers that have had children and have none left: what
    /// ZooKeeper's `ContainerManager` deletes, in path order.
    pub fn empty_containers(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.is_container() && n.children.is_empty() && n.stat.cversion > 0)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Every path, in path order.
    pub fn paths(&self) -> impl Iterator<Item = (&String, &Node)> {
        self.nodes.iter()
    }

    /// How many nodes lie under `path` (not counting it).
    pub fn descendants(&self, path: &str) -> usize {
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter(|(p, _)| p.as_str() != "/")
            .count()
    }
}

/// A set of names iterated in the order of Java's `HashSet<String>` created
/// with capacity 8 (what a ZooKeeper node keeps its children in): by bucket
/// of the string's Java hash, then by insertion within a bucket; the table
/// doubles when more than three quarters full and never shrinks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaStringSet {
    buckets: Vec<Vec<(i32, String)>>,
    len: usize,
}

impl Default for JavaStringSet {
    fn default() -> JavaStringSet {
        JavaStringSet {
            buckets: vec![Vec::new(); 8],
            len: 0,
        }
    }
}

/// Java's `String.hashCode` over UTF-16 code units.
pub fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `HashMap.hash`: the high bits folded into the low ones.
fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

impl JavaStringSet {
    /// How many names.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether it holds `name`.
    pub fn contains(&self, name: &str) -> bool {
        let h = java_hash(name);
        self.buckets[self.index(h)].iter().any(|(_, n)| n == name)
    }

    fn index(&self, h: i32) -> usize {
        (spread(h) as usize) & (self.buckets.len() - 1)
    }

    /// Adds `name`; false if it was there.
    pub fn insert(&mut self, name: &str) -> bool {
        if self.contains(name) {
            return false;
        }
        let h = java_hash(name);
        let i = self.index(h);
        self.buckets[i].push((h, name.to_string()));
        // A ninth entry in one bucket of a table under 64 doubles it
        // (`treeifyBin`); a larger table would make the bucket a tree,
        // whose order this does not follow.
        if self.buckets[i].len() > 8 && self.buckets.len() < 64 {
            self.grow();
        }
        self.len += 1;
        if self.len > self.buckets.len() * 3 / 4 {
            self.grow();
        }
        true
    }

    /// Removes `name`; false if it was not there.
    pub fn remove(&mut self, name: &str) -> bool {
        let i = self.index(java_hash(name));
        let before = self.buckets[i].len();
        self.buckets[i].retain(|(_, n)| n != name);
        let removed = self.buckets[i].len() != before;
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// Doubles the table; each bucket splits in two, keeping its order.
    fn grow(&mut self) {
        let mut next = vec![Vec::new(); self.buckets.len() * 2];
        let mask = next.len() - 1;
        for bucket in std::mem::take(&mut self.buckets) {
            for (h, name) in bucket {
                next[(spread(h) as usize) & mask].push((h, name));
            }
        }
        self.buckets = next;
    }

    /// The names in Java's iteration order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.buckets
            .iter()
            .flat_map(|b| b.iter().map(|(_, n)| n.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_tree_has_the_system_nodes_with_zookeepers_stats() {
        let tree = Tree::new();
        assert_eq!(tree.get("/").map(|n| n.client_stat().cversion), Some(-1));
        let zk = tree.get("/zookeeper").map(Node::client_stat);
        assert_eq!(zk.map(|s| (s.cversion, s.num_children)), Some((-2, 2)));
        let config = tree.get("/zookeeper/config").map(Node::client_stat);
        assert_eq!(config.map(|s| s.aversion), Some(-1));
        assert_eq!(
            tree.get("/zookeeper/quota").and_then(|n| n.data.clone()),
            Some(vec![])
        );
    }

    #[test]
    fn the_shown_cversion_counts_creates_and_deletes() {
        let mut node = Node::new(None, open_acl_unsafe(), StoredStat::default());
        node.stat.cversion = 1;
        node.children.insert("b");
        assert_eq!(node.client_stat().cversion, 1);
        node.children.remove("b");
        assert_eq!(node.client_stat().cversion, 2);
    }

    #[test]
    fn java_string_hashes_match_javas() {
        assert_eq!(java_hash(""), 0);
        assert_eq!(java_hash("a"), 97);
        assert_eq!(java_hash("hello"), 99162322);
        assert_eq!(java_hash("lock-0000000001"), -864_326_685);
    }

    #[test]
    fn children_iterate_in_java_hash_set_order() {
        // Each expected order was printed by Java 17's HashSet<String>(8).
        let mut set = JavaStringSet::default();
        for name in ["quota", "config"] {
            set.insert(name);
        }
        assert_eq!(set.iter().collect::<Vec<_>>(), ["config", "quota"]);
        let mut set = JavaStringSet::default();
        for name in ["b", "a", "zz", "lock", "x", "y", "q", "w", "e", "r", "t"] {
            set.insert(name);
        }
        let expected = ["zz", "a", "q", "b", "r", "t", "e", "w", "x", "lock", "y"];
        assert_eq!(set.iter().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn removals_keep_the_grown_table_and_its_order() {
        let name = |i: i32| format!("_c_x-lock-{i:010}");
        let mut set = JavaStringSet::default();
        for i in 0..40 {
            set.insert(&name(i));
        }
        for i in (0..40).step_by(3) {
            assert!(set.remove(&name(i)));
        }
        let expected = [
            13, 35, 14, 37, 16, 38, 31, 10, 32, 11, 34, 17, 19, 2, 25, 4, 26, 5, 20, 22, 1, 23, 28,
            7, 29, 8,
        ];
        let got: Vec<String> = set.iter().map(str::to_string).collect();
        assert_eq!(got, expected.map(name));
    }
}
