//! simmysql's side of the protocol, driven with `mysqlproto`'s client
//! half over turmoil: the greeting is the same bytes for the same seed,
//! result sets come without EOF packets to a client that asks for
//! DEPRECATE_EOF, COM_PING and COM_INIT_DB are answered, other commands
//! get MariaDB's 1047, and a packet out of order ends the connection with
//! 1156.

use std::time::Duration;

use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use mysqlproto::{
    Capabilities, Command, ErrPacket, Handshake, HandshakeResponse, PacketCodec, Reply,
    ReplyReader, auth,
};
use simmysql::serve_sim;
use tokio_util::codec::{Decoder, Framed};
use turmoil::net::TcpStream;

mod common;

const PORT: u16 = 3306;

type Conn = Framed<TcpStream, PacketCodec>;

fn sim() -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(60))
        .rng_seed(7)
        .build()
}

/// Connects and logs in as `mysqlproto`'s client would; the greeting's
/// payload, the capabilities in use and the connection.
async fn connect() -> std::io::Result<(Vec<u8>, Capabilities, Conn)> {
    let mut conn = Framed::new(
        TcpStream::connect(("db", PORT)).await?,
        PacketCodec::default(),
    );
    let greeting = conn.next().await.expect("a greeting").map_err(io)?;
    let hello = Handshake::decode(&greeting).map_err(io)?;
    let token = auth::native_password_token(b"any", &hello.scramble);
    let response = HandshakeResponse::new(hello.capabilities, "app", token, Some("test".into()));
    let mut payload = Vec::new();
    response.encode(&mut payload).map_err(io)?;
    conn.send(payload).await.map_err(io)?;
    let caps = response.capabilities;
    match reply(&mut conn, caps).await? {
        Reply::Ok(_) => Ok((greeting.to_vec(), caps, conn)),
        other => panic!("login refused: {other:?}"),
    }
}

fn io(e: mysqlproto::ProtoError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())
}

async fn reply(conn: &mut Conn, caps: Capabilities) -> std::io::Result<Reply> {
    let mut reader = ReplyReader::new(caps);
    loop {
        let payload = conn.next().await.expect("an answer").map_err(io)?;
        if let Some(r) = reader.feed(&payload).map_err(io)? {
            return Ok(r);
        }
    }
}

async fn command(conn: &mut Conn, caps: Capabilities, c: Command) -> std::io::Result<Reply> {
    conn.codec_mut().reset();
    let mut payload = Vec::new();
    c.encode(&mut payload);
    conn.send(payload).await.map_err(io)?;
    reply(conn, caps).await
}

#[test]
fn the_conversation_with_mysqlprotos_client() {
    let mut sim = sim();
    let server = common::server();
    sim.host("db", move || serve_sim(server.clone(), PORT));
    sim.client("c", async {
        let (greeting, caps, mut conn) = connect().await?;
        assert!(caps.contains(Capabilities::DEPRECATE_EOF));
        let hello = Handshake::decode(&greeting).map_err(io)?;
        assert_eq!(hello.server_version, "5.5.5-10.11.19-MariaDB-0+deb12u1");
        assert_eq!(hello.scramble, auth::scramble(0, hello.connection_id));

        let got = command(
            &mut conn,
            caps,
            Command::Query("SELECT GET_LOCK('a', 0), NULL".into()),
        )
        .await?;
        let Reply::ResultSet(set) = got else {
            panic!("{got:?}")
        };
        assert_eq!(set.columns[0].name, "GET_LOCK('a', 0)");
        assert_eq!(set.rows[0].0, [Some(b"1".to_vec()), None]);

        assert!(matches!(
            command(&mut conn, caps, Command::Ping).await?,
            Reply::Ok(_)
        ));
        assert!(matches!(
            command(&mut conn, caps, Command::InitDb("other".into())).await?,
            Reply::Ok(_)
        ));
        // COM_STATISTICS: not served.
        let got = command(&mut conn, caps, Command::Other(0x09, bytes::Bytes::new())).await?;
        assert_eq!(got, Reply::Err(ErrPacket::unknown_command()));
        let got = command(&mut conn, caps, Command::Query("SELEC".into())).await?;
        assert!(
            matches!(got, Reply::Err(ref e) if e.code == 1064 && e.sql_state() == "42000"),
            "{got:?}"
        );

        // A command whose sequence id is not 0: MariaDB's 1156, numbered
        // after the packet it answers, then the connection ends.
        conn.codec_mut().set_seq(3);
        conn.send(vec![0x0e]).await.map_err(io)?;
        assert_eq!(
            reply(&mut conn, caps).await?,
            Reply::Err(ErrPacket::out_of_order())
        );
        assert!(conn.next().await.is_none());
        Ok(())
    });
    sim.run().unwrap();
}

/// The bytes the server sends a client that connects and quits.
fn greeting_bytes() -> Vec<u8> {
    let mut sim = sim();
    let server = common::server();
    sim.host("db", move || serve_sim(server.clone(), PORT));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    sim.client("c", async move {
        let (greeting, caps, mut conn) = connect().await?;
        let again = connect().await?.0;
        let _ = command(&mut conn, caps, Command::Ping).await?;
        *s.lock().unwrap() = [greeting, again].concat();
        Ok(())
    });
    sim.run().unwrap();
    seen.lock().unwrap().clone()
}

#[test]
fn the_greeting_is_the_same_bytes_on_every_run() {
    let first = greeting_bytes();
    assert!(!first.is_empty());
    assert_eq!(first, greeting_bytes());
    // And the scramble differs between connections.
    let half = first.len() / 2;
    let a = Handshake::decode(&first[..half]).unwrap();
    let b = Handshake::decode(&first[half..]).unwrap();
    assert_ne!(a.scramble, b.scramble);
    // Framing the same payload gives the same packet, too.
    let mut codec = PacketCodec::default();
    let mut wire = BytesMut::new();
    tokio_util::codec::Encoder::encode(&mut codec, first[..half].to_vec(), &mut wire).unwrap();
    let mut rx = PacketCodec::default();
    assert_eq!(&rx.decode(&mut wire).unwrap().unwrap()[..], &first[..half]);
}
