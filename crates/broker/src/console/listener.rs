//! The console's listener, bounded: at most [`CONNECTIONS_MAX`] connections at once (each holds
//! a permit until it closes; more wait in the kernel's backlog), so that browsers, scripts or a
//! hostile client cost the broker a bounded number of descriptors. A failed accept (out of
//! descriptors) backs off before the next.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Connections the console holds at once.
pub(crate) const CONNECTIONS_MAX: usize = 64;
/// The pause after a failed accept.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A listener that holds at most [`CONNECTIONS_MAX`] connections.
pub(super) struct Limited {
    listener: TcpListener,
    permits: Arc<Semaphore>,
}

impl Limited {
    pub(super) fn new(listener: TcpListener) -> Self {
        Self { listener, permits: Arc::new(Semaphore::new(CONNECTIONS_MAX)) }
    }
}

/// An accepted connection with its permit.
pub(super) struct Connection {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

impl axum::serve::Listener for Limited {
    type Io = Connection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            // The semaphore is never closed.
            let Ok(permit) = Arc::clone(&self.permits).acquire_owned().await else { continue };
            match self.listener.accept().await {
                Ok((stream, peer)) => return (Connection { stream, _permit: permit }, peer),
                Err(error) => {
                    tracing::debug!(%error, "the console could not accept a connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

/// The peer of a console connection (for the ACLs' host).
#[derive(Debug, Clone, Copy)]
pub(super) struct Peer(pub(super) SocketAddr);

impl Connected<IncomingStream<'_, Limited>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Limited>) -> Self {
        Self(*stream.remote_addr())
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
