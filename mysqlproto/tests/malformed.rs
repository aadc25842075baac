//! No bytes make a decoder panic: every decoder is fed every prefix of a
//! valid packet of its kind, each with a byte flipped, and a few thousand
//! pseudo-random packets (a fixed xorshift, so a failure reproduces); it
//! must return, an error or a value, every time.

use bytes::{Bytes, BytesMut};
use mysqlproto::{
    AuthSwitch, Capabilities, ColumnDefinition, Command, EofPacket, ErrPacket, Handshake,
    HandshakeResponse, OkPacket, PacketCodec, ReplyReader, TextRow, auth,
};
use tokio_util::codec::Decoder;

/// Runs every decoder on `b`, ignoring what they return.
fn decode_all(b: &[u8]) {
    let _ = Handshake::decode(b);
    let _ = HandshakeResponse::decode(b);
    let _ = AuthSwitch::decode(b);
    let _ = Command::decode(Bytes::copy_from_slice(b));
    let all = Capabilities(u32::MAX);
    let _ = OkPacket::decode(b, all);
    let _ = OkPacket::decode(b, Capabilities::PROTOCOL_41);
    let _ = ErrPacket::decode(b);
    let _ = EofPacket::decode(b);
    let _ = ColumnDefinition::decode(b);
    for width in [0, 1, 3, usize::MAX] {
        let _ = TextRow::decode(b, width);
    }
    for caps in [Capabilities::PROTOCOL_41, all] {
        let mut r = ReplyReader::new(caps);
        // The same bytes as every packet of an answer, as far as it goes.
        for _ in 0..4 {
            if r.feed(b).is_err() {
                break;
            }
        }
    }
    let mut codec = PacketCodec::new(1 << 20);
    let mut buf = BytesMut::from(b);
    while let Ok(Some(_)) = codec.decode(&mut buf) {}
}

fn valid_packets() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut b = Vec::new();
    Handshake::new("5.5.5-10.11.19-MariaDB-0+deb12u1", 9, auth::scramble(1, 9))
        .encode(&mut b)
        .unwrap();
    out.push(b);
    let mut r = HandshakeResponse::new(
        Handshake::SERVER_CAPABILITIES,
        "root",
        vec![1; 20],
        Some("test".into()),
    );
    r.capabilities |= Capabilities::CONNECT_ATTRS;
    r.attributes = vec![("_os".into(), "Linux".into())];
    let mut b = Vec::new();
    r.encode(&mut b).unwrap();
    out.push(b);
    let mut b = Vec::new();
    AuthSwitch::native_password(auth::scramble(1, 9))
        .encode(&mut b)
        .unwrap();
    out.push(b);
    let mut b = Vec::new();
    OkPacket {
        affected_rows: 70000,
        info: "info".into(),
        ..OkPacket::default()
    }
    .encode(0, &mut b);
    out.push(b);
    let mut b = Vec::new();
    ErrPacket::unknown_command().encode(&mut b);
    out.push(b);
    let mut b = Vec::new();
    ColumnDefinition::integer("n").encode(&mut b);
    out.push(b);
    let mut b = Vec::new();
    TextRow(vec![Some(b"abc".to_vec()), None]).encode(&mut b);
    out.push(b);
    // Framed packets, a split one among them.
    out.push(vec![3, 0, 0, 0, 1, 2, 3, 0xff, 0xff, 0xff, 1, 0]);
    out
}

#[test]
fn prefixes_and_flipped_bytes_of_valid_packets_never_panic() {
    for p in valid_packets() {
        for end in 0..=p.len() {
            decode_all(&p[..end]);
            for at in 0..end {
                let mut q = p[..end].to_vec();
                q[at] ^= 0xff;
                decode_all(&q);
            }
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..5000 {
        let len = (next() % 120) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        // Markers where decoders branch, often enough to reach them.
        if let Some(first) = b.first_mut() {
            *first = [0x00, 0x0a, 0xfe, 0xff, 0xfb, 0x03, 0x01][(next() % 7) as usize];
        }
        decode_all(&b);
    }
}
