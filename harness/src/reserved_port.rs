//! A loopback port held for a server that starts later.
//!
//! A test that points clients at a server before the server runs (an
//! outage: Redis is down, then comes back) needs the port to stay its own
//! while nothing listens there. A port found by binding port 0 and letting
//! go is anyone's from that moment: another test's server may take it and
//! answer in the late server's place.
//!
//! [`ReservedPort`] keeps a socket bound to the port without listening, with
//! `SO_REUSEADDR` set. On Linux that gives exactly what an outage needs:
//!
//! - a client connecting there is refused, as from a stopped server;
//! - the kernel hands the port to no one binding port 0, and a plain
//!   `bind` to it fails with "address in use";
//! - a server that sets `SO_REUSEADDR` itself (redis-server and Valkey do)
//!   can bind the port and listen, because the held socket never listens.

use socket2::{Domain, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};

/// A loopback port bound but not listening, kept until dropped: clients are
/// refused there, other tests cannot be given it, and a `redis-server`
/// started on it binds it all the same.
#[derive(Debug)]
pub struct ReservedPort {
    /// Held only to keep the port: dropping it closes the socket.
    _socket: Socket,
    port: u16,
}

impl ReservedPort {
    /// Binds a free loopback port (chosen by the kernel) and holds it.
    pub fn new() -> io::Result<ReservedPort> {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        socket.set_reuse_address(true)?;
        socket.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())?;
        let port = socket
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("a bound IPv4 socket has no IPv4 address"))?
            .port();
        Ok(ReservedPort {
            _socket: socket,
            port,
        })
    }

    /// The held port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_client_connecting_to_a_reserved_port_is_refused() {
        let held = ReservedPort::new().unwrap();
        let err = TcpStream::connect(held.addr()).expect_err("nothing listens");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn binding_port_zero_never_hands_out_a_reserved_port() {
        let held = ReservedPort::new().unwrap();
        for _ in 0..2_000 {
            let other = TcpListener::bind("127.0.0.1:0").unwrap();
            assert_ne!(other.local_addr().unwrap().port(), held.port());
        }
    }

    #[test]
    fn a_plain_bind_to_a_reserved_port_fails_while_it_is_held() {
        let held = ReservedPort::new().unwrap();
        let plain = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        let err = plain.bind(&held.addr().into()).expect_err("held");
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn a_server_that_reuses_addresses_can_listen_on_a_reserved_port() {
        let held = ReservedPort::new().unwrap();
        let server = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        server.set_reuse_address(true).unwrap();
        server.bind(&held.addr().into()).unwrap();
        server.listen(8).unwrap();
        TcpStream::connect(held.addr()).expect("the server answers");
    }
}
