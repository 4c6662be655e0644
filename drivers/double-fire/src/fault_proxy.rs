//! A fault proxy: loses responses after the server has produced them.
//!
//! Each connection is forwarded to the server unchanged. The moment the
//! first byte of the server's answer arrives, the proxy closes the client's
//! connection without passing that byte on. The server did all its work
//! (the answer exists, so the commit happened first); the client saw
//! nothing. That is the "response lost after commit" window.

use std::io;
use std::net::SocketAddr;

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A running proxy on a loopback port. Stops when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy in front of `upstream` that loses every response.
    pub async fn losing_responses(upstream: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(lose_response(client, upstream));
            }
        });
        Ok(Self { addr, accept })
    }

    /// The proxy's base URL, to use instead of the server's.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn lose_response(client: TcpStream, upstream: SocketAddr) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return; // Dropping `client` closes it: the caller sees a failed call.
    };
    let (mut from_client, _to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let forward = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_client, &mut to_server).await;
    });
    // Wait for the answer to start, then throw it away with the connection.
    let mut first = [0u8; 1];
    let _ = from_server.read(&mut first).await;
    forward.abort();
    let _ = forward.await; // the task's half of the client socket is dropped now
    // `_to_client` drops here: the client's connection closes with no
    // response byte sent.
}
