//! A minimal ZooKeeper client for the tests, over any byte stream (tokio
//! TCP or turmoil's), written on zkproto's records: one request at a time,
//! notifications kept as they arrive.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use zkproto::codes::{CreateMode, OpCode, xid};
use zkproto::frame::{read_frame, write_frame};
use zkproto::jute::{Buffer, Jute, Reader, encode};
use zkproto::records::{
    ConnectRequest, ConnectResponse, CreateRequest, CreateResponse, DeleteRequest,
    GetChildrenResponse, GetDataResponse, PathWatchRequest, ReplyHeader, RequestHeader,
    SetDataRequest, SetWatches, Stat, StatResponse, WatcherEvent, open_acl_unsafe,
};

/// A server whose wall clock reads `ms` (for ctime and mtime).
pub fn server_at(ms: i64) -> simzk::Server {
    simzk::Server::new(simzk::Config::new(Arc::new(move || ms)))
}

/// One connection with its session.
pub struct Client<S> {
    pub stream: S,
    next_xid: i32,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    pub timeout_ms: i32,
    /// The zxid of the last reply.
    pub last_zxid: i64,
    /// Notifications received and not yet taken.
    pub notices: Vec<WatcherEvent>,
}

/// A reply: its header and body.
pub struct Reply {
    pub header: ReplyHeader,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn decode<T: Jute>(&self) -> T {
        T::take(&mut Reader::new(&self.body)).expect("a reply body")
    }
}

/// Connects: a new session when `resume` is `None`.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    timeout_ms: i32,
    resume: Option<(i64, Vec<u8>)>,
) -> io::Result<ConnectResponse> {
    let (session_id, passwd) = resume.unwrap_or((0, vec![0; 16]));
    let request = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        time_out: timeout_ms,
        session_id,
        passwd: Buffer(Some(passwd)),
        read_only: Some(false),
    };
    write_frame(stream, &encode(&request)).await?;
    let frame = read_frame(stream)
        .await?
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no connect response"))?;
    ConnectResponse::take(&mut Reader::new(&frame))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    /// A new session over `stream`.
    pub async fn connect(stream: S, timeout_ms: i32) -> io::Result<Client<S>> {
        Client::resume(stream, timeout_ms, None).await
    }

    /// A session over `stream`, new or resumed.
    pub async fn resume(
        mut stream: S,
        timeout_ms: i32,
        resume: Option<(i64, Vec<u8>)>,
    ) -> io::Result<Client<S>> {
        let response = handshake(&mut stream, timeout_ms, resume).await?;
        if response.time_out == 0 {
            return Err(io::Error::other("session expired"));
        }
        Ok(Client {
            stream,
            next_xid: 1,
            session_id: response.session_id,
            passwd: response.passwd.bytes().to_vec(),
            timeout_ms: response.time_out,
            last_zxid: 0,
            notices: Vec::new(),
        })
    }

    /// Sends a request with a given xid and waits for its reply, keeping
    /// the notifications that come first.
    pub async fn call_xid<R: Jute>(
        &mut self,
        xid: i32,
        op: OpCode,
        request: &R,
    ) -> io::Result<Reply> {
        let mut body = encode(&RequestHeader {
            xid,
            r#type: op.code(),
        });
        request.put(&mut body);
        write_frame(&mut self.stream, &body).await?;
        loop {
            let frame = read_frame(&mut self.stream)
                .await?
                .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "closed"))?;
            let mut r = Reader::new(&frame);
            let header = ReplyHeader::take(&mut r).map_err(|e| io::Error::other(e.to_string()))?;
            let rest = frame[16..].to_vec();
            if header.xid == xid::NOTIFICATION {
                self.notices.push(Reply { header, body: rest }.decode());
                continue;
            }
            self.last_zxid = header.zxid;
            return Ok(Reply { header, body: rest });
        }
    }

    /// Sends a request and waits for its reply.
    pub async fn call<R: Jute>(&mut self, op: OpCode, request: &R) -> io::Result<Reply> {
        let xid = self.next_xid;
        self.next_xid += 1;
        self.call_xid(xid, op, request).await
    }

    /// A ping; returns the reply's zxid.
    pub async fn ping(&mut self) -> io::Result<i64> {
        let mut body = encode(&RequestHeader {
            xid: xid::PING,
            r#type: OpCode::Ping.code(),
        });
        body.truncate(8);
        write_frame(&mut self.stream, &body).await?;
        loop {
            let frame = read_frame(&mut self.stream)
                .await?
                .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "closed"))?;
            let header: ReplyHeader = ReplyHeader::take(&mut Reader::new(&frame))
                .map_err(|e| io::Error::other(e.to_string()))?;
            if header.xid == xid::NOTIFICATION {
                self.notices.push(
                    Reply {
                        header,
                        body: frame[16..].to_vec(),
                    }
                    .decode(),
                );
                continue;
            }
            return Ok(header.zxid);
        }
    }

    /// `create`: the path it got, or the error code.
    pub async fn create(
        &mut self,
        path: &str,
        data: Option<&[u8]>,
        mode: CreateMode,
    ) -> io::Result<Result<String, i32>> {
        let reply = self
            .call(
                OpCode::Create,
                &CreateRequest {
                    path: path.into(),
                    data: Buffer(data.map(<[u8]>::to_vec)),
                    acl: open_acl_unsafe(),
                    flags: mode.code(),
                },
            )
            .await?;
        Ok(match reply.header.err {
            0 => Ok(reply.decode::<CreateResponse>().path),
            err => Err(err),
        })
    }

    /// `createContainer` (no data): the path, or the error code.
    pub async fn create_container(&mut self, path: &str) -> io::Result<Result<String, i32>> {
        let reply = self
            .call(
                OpCode::CreateContainer,
                &CreateRequest {
                    path: path.into(),
                    data: Buffer(Some(Vec::new())),
                    acl: open_acl_unsafe(),
                    flags: CreateMode::Container.code(),
                },
            )
            .await?;
        Ok(match reply.header.err {
            0 => Ok(reply.decode::<zkproto::records::Create2Response>().path),
            err => Err(err),
        })
    }

    /// `getData`: the data and stat, or the error code.
    pub async fn get(
        &mut self,
        path: &str,
        watch: bool,
    ) -> io::Result<Result<(Option<Vec<u8>>, Stat), i32>> {
        let reply = self
            .call(
                OpCode::GetData,
                &PathWatchRequest {
                    path: path.into(),
                    watch,
                },
            )
            .await?;
        Ok(match reply.header.err {
            0 => {
                let r: GetDataResponse = reply.decode();
                Ok((r.data.0, r.stat))
            }
            err => Err(err),
        })
    }

    /// `exists`: the stat, or the error code.
    pub async fn exists(&mut self, path: &str, watch: bool) -> io::Result<Result<Stat, i32>> {
        let reply = self
            .call(
                OpCode::Exists,
                &PathWatchRequest {
                    path: path.into(),
                    watch,
                },
            )
            .await?;
        Ok(match reply.header.err {
            0 => Ok(reply.decode::<StatResponse>().stat),
            err => Err(err),
        })
    }

    /// `getChildren`: the names, or the error code.
    pub async fn children(
        &mut self,
        path: &str,
        watch: bool,
    ) -> io::Result<Result<Vec<String>, i32>> {
        let reply = self
            .call(
                OpCode::GetChildren,
                &PathWatchRequest {
                    path: path.into(),
                    watch,
                },
            )
            .await?;
        Ok(match reply.header.err {
            0 => Ok(reply.decode::<GetChildrenResponse>().children),
            err => Err(err),
        })
    }

    /// `setData`: the new stat, or the error code.
    pub async fn set(
        &mut self,
        path: &str,
        data: &[u8],
        version: i32,
    ) -> io::Result<Result<Stat, i32>> {
        let reply = self
            .call(
                OpCode::SetData,
                &SetDataRequest {
                    path: path.into(),
                    data: Buffer(Some(data.to_vec())),
                    version,
                },
            )
            .await?;
        Ok(match reply.header.err {
            0 => Ok(reply.decode::<StatResponse>().stat),
            err => Err(err),
        })
    }

    /// `delete`: the error code (0: deleted).
    pub async fn delete(&mut self, path: &str, version: i32) -> io::Result<i32> {
        let reply = self
            .call(
                OpCode::Delete,
                &DeleteRequest {
                    path: path.into(),
                    version,
                },
            )
            .await?;
        Ok(reply.header.err)
    }

    /// `setWatches` as a reconnecting client sends it.
    pub async fn set_watches(&mut self, request: &SetWatches) -> io::Result<Reply> {
        self.call_xid(xid::SET_WATCHES, OpCode::SetWatches, request)
            .await
    }

    /// `closeSession`; then the server closes the connection.
    pub async fn close(&mut self) -> io::Result<Reply> {
        let reply = self.call(OpCode::CloseSession, &Empty).await?;
        self.stream.shutdown().await.ok();
        Ok(reply)
    }

    /// Pings every `every` until a notification has arrived; takes them.
    pub async fn wait_notices(
        &mut self,
        every: std::time::Duration,
    ) -> io::Result<Vec<WatcherEvent>> {
        loop {
            self.ping().await?;
            if !self.notices.is_empty() {
                return Ok(std::mem::take(&mut self.notices));
            }
            tokio::time::sleep(every).await;
        }
    }

    /// Whether the server has closed the connection (reads to the end).
    pub async fn closed_by_server(&mut self) -> bool {
        matches!(read_frame(&mut self.stream).await, Ok(None) | Err(_))
    }
}

/// A request with no record.
pub struct Empty;

impl Jute for Empty {
    fn put(&self, _out: &mut Vec<u8>) {}
    fn take(_r: &mut Reader<'_>) -> Result<Self, zkproto::JuteError> {
        Ok(Empty)
    }
}
