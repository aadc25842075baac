//! Authentication with `mysql_native_password`, the plugin every MySQL
//! and MariaDB client speaks, and the scramble it hashes with.
//!
//! The password never crosses the wire: the server sends a 20-byte
//! scramble in its greeting, and the client answers
//! `SHA1(password) XOR SHA1(scramble ++ SHA1(SHA1(password)))`. The server,
//! which keeps only `SHA1(SHA1(password))`, XORs the answer with
//! `SHA1(scramble ++ stored)` to get `SHA1(password)` back, and checks that
//! its SHA-1 is what it stored. An empty password is an empty answer.
//!
//! A server that wants another plugin than the one the client chose says
//! so with an [`AuthSwitch`] request carrying that plugin's data.
//!
//! The scramble is derived from a seed and the connection id rather than
//! drawn at random, so that a simulated run is the same byte for byte
//! each time; it guards nothing in a simulation.

use bytes::BufMut;
use sha1_smol::Sha1;

use crate::error::{ProtoError, Result};
use crate::wire::{Reader, Writer, no_nul};

/// The plugin's name, as the greeting and the response carry it.
pub const NATIVE_PASSWORD: &str = "mysql_native_password";

fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.digest().bytes()
}

/// The scramble of connection `connection_id` under `seed`: SHA-1 of the
/// two, each byte then kept to 7 bits and moved off NUL and `$` as MySQL's
/// own scrambles are (a NUL would end the greeting's field early).
pub fn scramble(seed: u64, connection_id: u32) -> [u8; 20] {
    let mut s = sha1(&[
        b"locklab mysql scramble",
        &seed.to_le_bytes(),
        &connection_id.to_le_bytes(),
    ]);
    for b in &mut s {
        *b &= 0x7f;
        if *b == 0 || *b == b'$' {
            *b += 1;
        }
    }
    s
}

/// What a server keeps of a password: `SHA1(SHA1(password))` (the hex of
/// it, `*` first, is what `PASSWORD('...')` shows).
pub fn native_password_hash(password: &[u8]) -> [u8; 20] {
    sha1(&[&sha1(&[password])])
}

/// The client's answer to `scramble` for `password`; empty for an empty
/// password.
pub fn native_password_token(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = sha1(&[password]);
    let stage2 = sha1(&[&stage1]);
    let mask = sha1(&[scramble, &stage2]);
    stage1.iter().zip(mask).map(|(a, b)| a ^ b).collect()
}

/// Whether `token` answers `scramble` for the password whose
/// [`native_password_hash`] is `stored` (`None`: the empty password).
pub fn check_native_password(token: &[u8], scramble: &[u8], stored: Option<&[u8; 20]>) -> bool {
    let Some(stored) = stored else {
        return token.is_empty();
    };
    let Ok(token) = <[u8; 20]>::try_from(token) else {
        return false;
    };
    let mask = sha1(&[scramble, stored]);
    let stage1: Vec<u8> = token.iter().zip(mask).map(|(a, b)| a ^ b).collect();
    sha1(&[&stage1]) == *stored
}

/// Auth Switch Request: the server asks the client to authenticate again
/// with another plugin (0xFE, the plugin's name, its data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSwitch {
    /// The plugin to use.
    pub plugin: String,
    /// Its data: for `mysql_native_password`, the 20-byte scramble.
    pub data: Vec<u8>,
}

impl AuthSwitch {
    /// A switch to `mysql_native_password` with `scramble`.
    pub fn native_password(scramble: [u8; 20]) -> Self {
        AuthSwitch {
            plugin: NATIVE_PASSWORD.into(),
            data: scramble.to_vec(),
        }
    }

    /// The packet's payload.
    pub fn encode(&self, out: &mut impl BufMut) -> Result<()> {
        no_nul(self.plugin.as_bytes(), "auth plugin name")?;
        out.put_u8(0xfe);
        out.put_nul_bytes(self.plugin.as_bytes());
        out.put_slice(&self.data);
        // The native plugin's scramble is sent NUL-terminated, as MariaDB
        // sends it.
        if self.plugin == NATIVE_PASSWORD {
            out.put_u8(0);
        }
        Ok(())
    }

    /// Reads a request.
    pub fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let header = r.u8("auth switch header")?;
        if header != 0xfe {
            return Err(ProtoError::invalid(
                "auth switch header",
                "0xfe",
                format_args!("{header:#04x}"),
            ));
        }
        let plugin = r.nul_str("auth plugin name")?;
        let rest = r.rest();
        let data = rest.strip_suffix(&[0]).unwrap_or(rest).to_vec();
        Ok(AuthSwitch { plugin, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scramble_is_deterministic_and_safe_to_send() {
        assert_eq!(scramble(1, 2), scramble(1, 2));
        assert_ne!(scramble(1, 2), scramble(1, 3));
        assert_ne!(scramble(1, 2), scramble(2, 2));
        for id in 0..200 {
            assert!(
                scramble(9, id)
                    .iter()
                    .all(|&b| b != 0 && b != b'$' && b < 0x80)
            );
        }
    }

    #[test]
    fn a_token_checks_against_its_password_only() {
        let s = scramble(0, 1);
        let stored = native_password_hash(b"secret");
        let token = native_password_token(b"secret", &s);
        assert_eq!(token.len(), 20);
        assert!(check_native_password(&token, &s, Some(&stored)));
        let wrong = native_password_token(b"Secret", &s);
        assert!(!check_native_password(&wrong, &s, Some(&stored)));
        // The same password under another scramble is another token.
        assert!(!check_native_password(
            &token,
            &scramble(0, 2),
            Some(&stored)
        ));
        assert!(!check_native_password(&token[..19], &s, Some(&stored)));
    }

    #[test]
    fn the_empty_password_is_the_empty_token() {
        let s = scramble(0, 1);
        assert!(native_password_token(b"", &s).is_empty());
        assert!(check_native_password(&[], &s, None));
        assert!(!check_native_password(&[1; 20], &s, None));
    }

    #[test]
    fn the_hash_is_mysqls() {
        // SELECT PASSWORD('secret') in MariaDB 10.11.
        let hex: String = native_password_hash(b"secret")
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        assert_eq!(hex, "14E65567ABDB5135D0CFD9A70B3032C179A49EE7");
    }

    #[test]
    fn auth_switch_round_trips_and_checks_its_header() {
        let a = AuthSwitch::native_password(scramble(3, 4));
        let mut b = Vec::new();
        a.encode(&mut b).unwrap();
        assert_eq!(b[0], 0xfe);
        assert_eq!(*b.last().unwrap(), 0);
        assert_eq!(AuthSwitch::decode(&b).unwrap(), a);
        assert!(AuthSwitch::decode(&[0x00]).is_err());
        assert!(AuthSwitch::decode(&[0xfe, b'x']).is_err());
    }
}
