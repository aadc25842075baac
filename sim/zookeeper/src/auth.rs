//! Who a connection is: the ids ZooKeeper gives it (its `ip`, then a
//! `digest` id per `addauth digest user:password`), kept in the order of
//! ZooKeeper's `ConcurrentHashMap` key set, which is the order `whoami`
//! prints them in.

use zkproto::records::ClientInfo;

use crate::tree::java_hash;

/// One authenticated id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthId {
    /// The scheme (`ip`, `digest`).
    pub scheme: String,
    /// The id (`127.0.0.1`, `user:base64(sha1)`).
    pub id: String,
    /// When it was added (ties within a hash bucket keep this order).
    seq: usize,
}

/// A connection's ids.
#[derive(Debug, Clone, Default)]
pub struct AuthIds {
    ids: Vec<AuthId>,
    added: usize,
}

impl AuthIds {
    /// The ids of a connection from `peer_ip`.
    pub fn from_peer(peer_ip: String) -> AuthIds {
        let mut ids = AuthIds::default();
        ids.add("ip", peer_ip);
        ids
    }

    /// Adds an id (once).
    pub fn add(&mut self, scheme: &str, id: String) {
        if self.ids.iter().any(|a| a.scheme == scheme && a.id == id) {
            return;
        }
        self.ids.push(AuthId {
            scheme: scheme.to_string(),
            id,
            seq: self.added,
        });
        self.added += 1;
        // A set of a handful of ids keeps the map's first table of 16.
        self.ids.sort_by_key(|a| (bucket(&a.scheme, &a.id), a.seq));
    }

    /// Adds the digest id of `user:password` credentials.
    pub fn add_digest(&mut self, credentials: &str) {
        self.add("digest", digest_id(credentials));
    }

    /// What `whoAmI` answers: each id's scheme and user (a digest id's
    /// user is what precedes its `:`).
    pub fn client_info(&self) -> Vec<ClientInfo> {
        self.ids
            .iter()
            .map(|a| ClientInfo {
                auth_scheme: a.scheme.clone(),
                user: if a.scheme == "digest" {
                    a.id.split(':').next().unwrap_or_default().to_string()
                } else {
                    a.id.clone()
                },
            })
            .collect()
    }
}

/// The bucket of an `Id` in a 16-slot `ConcurrentHashMap`: the jute
/// record's hash (`37 * (37 * 17 + scheme) + id`), spread.
fn bucket(scheme: &str, id: &str) -> u32 {
    let h = 37i32
        .wrapping_mul(37i32.wrapping_mul(17).wrapping_add(java_hash(scheme)))
        .wrapping_add(java_hash(id)) as u32;
    ((h ^ (h >> 16)) & 0x7fff_ffff) & 15
}

/// `DigestAuthenticationProvider.generateDigest`: `user:` and the base64
/// SHA-1 of the whole `user:password`.
pub fn digest_id(credentials: &str) -> String {
    let user = credentials.split(':').next().unwrap_or_default();
    let hash = sha1_smol::Sha1::from(credentials.as_bytes())
        .digest()
        .bytes();
    format!("{user}:{}", base64(&hash))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_id_is_zookeepers() {
        // DigestAuthenticationProvider.generateDigest("user:pw") in 3.8.0.
        assert_eq!(digest_id("user:pw"), "user:2Om+GBbT2q/tS6pdvACZbbm7/1A=");
        assert_eq!(digest_id("bob:x"), "bob:ttt4KD2l/LR0Mpj5c6jU0hrwVdE=");
    }

    #[test]
    fn ids_come_in_the_order_of_zookeepers_hash_set() {
        // Java 17 printed [digest user, digest bob, ip] for these.
        let mut ids = AuthIds::from_peer("127.0.0.1".into());
        ids.add_digest("user:pw");
        ids.add_digest("bob:x");
        ids.add_digest("user:pw");
        let users: Vec<String> = ids.client_info().into_iter().map(|c| c.user).collect();
        assert_eq!(users, ["user", "bob", "127.0.0.1"]);
    }
}
