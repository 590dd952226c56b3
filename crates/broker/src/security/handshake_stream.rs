//! The TCP stream under a TLS listener's connection: during the handshake it sends the alert
//! Kafka's TLS stack (JSSE) sends where rustls sends another, and after it passes every byte
//! through untouched.
//!
//! The one difference handled: a TLS 1.2 client that sends no certificate to a listener with
//! `ssl.client.auth=required`. rustls answers with `certificate_required` (116), an alert that
//! only TLS 1.3 defines (RFC 8446; RFC 5246 has none such); JSSE answers `bad_certificate` (42),
//! "Empty client certificate chain", and clients check for it (librdkafka's test 0097: its
//! client leaves out a certificate the broker's CA list does not name, and expects alert 42). In
//! TLS 1.2 the alert is a plaintext record, so it is rewritten on its way out. In TLS 1.3 the
//! alert is encrypted and `certificate_required` is what JSSE sends too: nothing changes.

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A TLS record's header: content type, version, length.
const RECORD_HEADER_BYTES: usize = 5;
const CONTENT_TYPE_ALERT: u8 = 21;
const TLS12: [u8; 2] = [3, 3];
const ALERT_LEVEL_FATAL: u8 = 2;
const ALERT_BAD_CERTIFICATE: u8 = 42;
const ALERT_CERTIFICATE_REQUIRED: u8 = 116;

/// A stream that rewrites TLS 1.2 handshake alerts to JSSE's until
/// [`HandshakeStream::handshake_done`].
#[derive(Debug)]
pub(crate) struct HandshakeStream<S> {
    inner: S,
    handshaking: bool,
}

impl<S> HandshakeStream<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self { inner, handshaking: true }
    }

    /// The handshake is over: from now on every write passes through as it is.
    pub(crate) fn handshake_done(&mut self) {
        self.handshaking = false;
    }

    pub(crate) fn into_inner(self) -> S {
        self.inner
    }
}

/// Where, in `buf` (whole records from its start, as rustls writes them), the description byte of
/// a plaintext TLS 1.2 fatal `certificate_required` alert is. A buffer that does not start at a
/// record (after a short write) or cuts its last record short is walked as far as it parses.
fn certificate_required_at(buf: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(header) = buf.get(at..at + RECORD_HEADER_BYTES) {
        let body_bytes = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let body = at + RECORD_HEADER_BYTES;
        if header[0] == CONTENT_TYPE_ALERT
            && header[1..3] == TLS12
            && body_bytes == 2
            && buf.get(body..body + 2) == Some(&[ALERT_LEVEL_FATAL, ALERT_CERTIFICATE_REQUIRED][..])
        {
            return Some(body + 1);
        }
        at = body + body_bytes;
    }
    None
}

impl<S: AsyncRead + Unpin> AsyncRead for HandshakeStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HandshakeStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.handshaking
            && let Some(at) = certificate_required_at(buf)
        {
            let mut rewritten = buf.to_vec();
            rewritten[at] = ALERT_BAD_CERTIFICATE;
            return Pin::new(&mut self.inner).poll_write(cx, &rewritten);
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        if self.handshaking {
            // One buffer at a time while the alert may be among them (as tokio's default).
            let buf = bufs.iter().find(|buf| !buf.is_empty()).map_or(&[][..], |buf| &**buf);
            return self.poll_write(cx, buf);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    const HANDSHAKE_RECORD: [u8; 9] = [22, 3, 3, 0, 4, 14, 0, 0, 0];
    const REQUIRED_ALERT: [u8; 7] = [21, 3, 3, 0, 2, 2, 116];

    async fn written(handshaking: bool, chunks: &[&[u8]]) -> Vec<u8> {
        let mut stream = HandshakeStream::new(Vec::new());
        if !handshaking {
            stream.handshake_done();
        }
        for chunk in chunks {
            stream.write_all(chunk).await.expect("a Vec takes every write");
        }
        stream.into_inner()
    }

    #[tokio::test]
    async fn a_tls12_certificate_required_alert_goes_out_as_bad_certificate() {
        assert_eq!(written(true, &[&REQUIRED_ALERT]).await, [21, 3, 3, 0, 2, 2, 42]);
        // Behind other records of the same write.
        let both = [&HANDSHAKE_RECORD[..], &REQUIRED_ALERT[..]].concat();
        let out = written(true, &[&both]).await;
        assert_eq!(out[..9], HANDSHAKE_RECORD);
        assert_eq!(out[9..], [21, 3, 3, 0, 2, 2, 42]);
    }

    #[tokio::test]
    async fn other_bytes_and_alerts_and_the_stream_after_the_handshake_pass_unchanged() {
        let others: [&[u8]; 5] = [
            &[21, 3, 3, 0, 2, 2, 48],  // unknown_ca: JSSE's differs, kept as it is
            &[21, 3, 3, 0, 2, 1, 116], // not fatal
            &[21, 3, 1, 0, 2, 2, 116], // not TLS 1.2's record version
            &[23, 3, 3, 0, 2, 2, 116], // application data (TLS 1.3's alerts)
            &[0, 18, 0, 4, 21, 3, 3, 0, 2, 2, 116], // mid-record: not walked into
        ];
        for bytes in others {
            assert_eq!(written(true, &[bytes]).await, bytes, "{bytes:?}");
        }
        assert_eq!(written(false, &[&REQUIRED_ALERT]).await, REQUIRED_ALERT);
    }

    #[test]
    fn the_walk_follows_record_lengths_and_stops_at_a_cut_record() {
        let long = [&[22, 3, 3, 0, 7][..], &REQUIRED_ALERT[..]].concat();
        // The alert's bytes are the body of a handshake record: not an alert.
        assert_eq!(certificate_required_at(&long), None);
        assert_eq!(certificate_required_at(&REQUIRED_ALERT[..6]), None);
        assert_eq!(certificate_required_at(&[]), None);
    }
}
