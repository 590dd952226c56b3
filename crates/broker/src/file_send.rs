//! A response sent as pieces: encoded bytes and ranges of segment files, written to a plaintext
//! socket with `sendfile` (Kafka's `MultiRecordsSend` of `FileRecords` through
//! `PlaintextTransportLayer.transferFrom`): a Fetch's record bytes go from the page cache to the
//! socket without being copied into the response.
//!
//! While a Fetch is read, each partition whose records stay in their file carries a
//! [`placeholder`] of their length as its `records`: a slice of a static zeroed region, so that
//! fetch sessions see how much the partition returned, and nothing is allocated or copied.
//! [`FileResponse::encode_fetch`] then encodes the response twice, without the record bytes:
//! with those partitions' `records` null, and empty. The two encodings have the same length
//! and differ exactly at those partitions' length fields (int32 -1 against 0 before v12, a
//! varint 0 against 1 from v12, KIP-482's compact bytes): that is where each file range goes,
//! behind its real length.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::FetchResponse;
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::protocol::Encodable;
use seglog_storage::segment::FileSlice;

use crate::error::Error;

/// The most bytes one placeholder stands for: above Kafka's `fetch.max.bytes` default, so any
/// partition's share of a response (a larger slice is read into memory instead). A zeroed
/// static lives in `.bss`: it costs address space, not memory, since nothing reads it.
const PLACEHOLDER_BYTES: usize = 64 << 20;

/// What placeholders point into; never read.
static PLACEHOLDER: [u8; PLACEHOLDER_BYTES] = [0; PLACEHOLDER_BYTES];

/// The first version whose records are compact bytes (a varint length).
const FLEXIBLE_VERSION: i16 = 12;

/// A placeholder for `len` record bytes left in a file, `None` when `len` is 0 or too large.
pub(crate) fn placeholder(len: usize) -> Option<Bytes> {
    let bytes = PLACEHOLDER.get(..len).filter(|bytes| !bytes.is_empty())?;
    Some(Bytes::from_static(bytes))
}

fn is_placeholder(records: &[u8]) -> bool {
    !records.is_empty() && PLACEHOLDER.as_ptr_range().contains(&records.as_ptr())
}

/// One piece of a response on the wire.
#[derive(Debug)]
pub(crate) enum Piece {
    Bytes(Bytes),
    File(FileSlice),
}

/// An encoded response body with file ranges in it.
#[derive(Debug)]
pub(crate) struct FileResponse {
    pieces: Vec<Piece>,
}

fn encoded(response: &FetchResponse, version: i16) -> Result<Bytes, Error> {
    let mut buf = BytesMut::new();
    response
        .encode(&mut buf, version)
        .map_err(|error| Error::Encode { what: "fetch response", source: error.into() })?;
    Ok(buf.freeze())
}

fn partitions(response: &mut FetchResponse) -> impl Iterator<Item = &mut PartitionData> {
    response.responses.iter_mut().flat_map(|topic| topic.partitions.iter_mut())
}

fn mismatch(what: String) -> Error {
    Error::Encode { what: "fetch response with records sent from files", source: what.into() }
}

impl FileResponse {
    /// Encodes `response`, whose partitions with a [`placeholder`] as `records` stand for
    /// `files`, in the order the response lists them.
    pub(crate) fn encode_fetch(
        response: &mut FetchResponse,
        version: i16,
        files: Vec<FileSlice>,
    ) -> Result<Self, Error> {
        let mut placeholders = 0;
        for partition in partitions(response) {
            let Some(records) = partition.records.take_if(|r| is_placeholder(r)) else {
                continue;
            };
            if files.get(placeholders).map(FileSlice::len) != Some(records.len()) {
                return Err(mismatch(format!(
                    "placeholder {placeholders} of {} bytes has no file slice of that length",
                    records.len()
                )));
            }
            placeholders += 1;
        }
        if placeholders != files.len() {
            return Err(mismatch(format!("{placeholders} placeholders for {} files", files.len())));
        }
        let absent = encoded(response, version)?;
        for partition in partitions(response) {
            if partition.records.is_none() {
                partition.records = Some(Bytes::new());
            }
        }
        let mut empty = encoded(response, version)?;
        if absent.len() != empty.len() {
            return Err(mismatch("the two encodings differ in length".to_owned()));
        }
        let field_bytes = if version >= FLEXIBLE_VERSION { 1 } else { 4 };
        let mut pieces = Vec::with_capacity(3 * files.len() + 1);
        let mut files = files.into_iter();
        // `empty` is split as it is consumed: it starts at `absent[consumed]`.
        let mut consumed = 0;
        while let Some(offset) = absent
            .get(consumed..)
            .and_then(|rest| rest.iter().zip(&empty).position(|(a, e)| a != e))
        {
            let field = consumed + offset;
            let Some(file) = files.next() else {
                return Err(mismatch(format!("a difference at byte {field} has no file")));
            };
            let before = empty.split_to(offset);
            let absent_field = absent.get(field..field + field_bytes).unwrap_or_default();
            let empty_field = empty.split_to(field_bytes.min(empty.len()));
            let whole_field = absent_field.len() == field_bytes
                && absent_field.iter().zip(&empty_field).all(|(a, e)| a != e);
            if !whole_field {
                return Err(mismatch(format!("the difference at byte {field} is no length field")));
            }
            consumed = field + field_bytes;
            if !before.is_empty() {
                pieces.push(Piece::Bytes(before));
            }
            pieces.push(Piece::Bytes(length_field(file.len(), version)?));
            pieces.push(Piece::File(file));
        }
        if files.next().is_some() {
            return Err(mismatch("fewer differences than files".to_owned()));
        }
        if !empty.is_empty() {
            pieces.push(Piece::Bytes(empty));
        }
        Ok(Self { pieces })
    }

    /// The body's size on the wire.
    pub(crate) fn len(&self) -> usize {
        pieces_len(&self.pieces)
    }

    /// The whole body in memory, the files' bytes read in (for a response that must be
    /// rewritten).
    pub(crate) fn into_memory(self) -> Result<BytesMut, Error> {
        let mut body = BytesMut::with_capacity(self.len());
        for piece in self.pieces {
            match piece {
                Piece::Bytes(bytes) => body.put_slice(&bytes),
                Piece::File(slice) => body.put_slice(&slice.read().map_err(Error::FileSend)?),
            }
        }
        Ok(body)
    }

    /// The pieces to write, after `prefix` (the size and the response header).
    pub(crate) fn into_pieces(self, prefix: Bytes) -> Vec<Piece> {
        let mut pieces = Vec::with_capacity(self.pieces.len() + 1);
        pieces.push(Piece::Bytes(prefix));
        pieces.extend(self.pieces);
        pieces
    }
}

/// The length of `len` record bytes as the response encodes it before them: an int32, or
/// from v12 an unsigned varint of `len + 1`.
fn length_field(len: usize, version: i16) -> Result<Bytes, Error> {
    let too_long = |_| mismatch(format!("{len} record bytes do not fit a length field"));
    let mut buf = BytesMut::with_capacity(5);
    if version >= FLEXIBLE_VERSION {
        let mut rest = u32::try_from(len + 1).map_err(too_long)?;
        loop {
            let low = u8::try_from(rest & 0x7f).unwrap_or_default();
            rest >>= 7;
            if rest == 0 {
                buf.put_u8(low);
                break;
            }
            buf.put_u8(low | 0x80);
        }
    } else {
        buf.put_i32(i32::try_from(len).map_err(too_long)?);
    }
    Ok(buf.freeze())
}

/// The bytes pieces put on the wire.
pub(crate) fn pieces_len(pieces: &[Piece]) -> usize {
    pieces
        .iter()
        .map(|piece| match piece {
            Piece::Bytes(bytes) => bytes.len(),
            Piece::File(slice) => slice.len(),
        })
        .sum()
}

/// A whole frame in memory, the files' bytes read in (for callers without a socket).
pub(crate) fn pieces_into_bytes(pieces: Vec<Piece>) -> Result<Bytes, Error> {
    let mut frame = BytesMut::new();
    for piece in pieces {
        match piece {
            Piece::Bytes(bytes) => frame.put_slice(&bytes),
            Piece::File(slice) => frame.put_slice(&slice.read().map_err(Error::FileSend)?),
        }
    }
    Ok(frame.freeze())
}

/// Writes pieces to a plaintext socket: each run of bytes with one vectored `write` (the
/// header and the partition fields before a file range go out together), file ranges with
/// `sendfile`, each when the socket is writable.
pub(crate) async fn write_pieces(
    socket: &tokio::net::TcpStream,
    pieces: Vec<Piece>,
) -> std::io::Result<()> {
    use std::os::fd::AsFd;
    use tokio::io::Interest;
    let mut run: std::collections::VecDeque<Bytes> = std::collections::VecDeque::new();
    let mut pieces = pieces.into_iter().peekable();
    while let Some(piece) = pieces.next() {
        match piece {
            Piece::Bytes(bytes) => {
                run.push_back(bytes);
                if matches!(pieces.peek(), Some(Piece::Bytes(_))) {
                    continue;
                }
                write_all_vectored(socket, &mut run).await?;
            }
            Piece::File(slice) => {
                let mut from = 0;
                while from < slice.len() {
                    socket.writable().await?;
                    let sent =
                        socket.try_io(Interest::WRITABLE, || slice.send_to(socket.as_fd(), from));
                    match sent {
                        Ok(sent) => from += sent,
                        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(error) => return Err(error),
                    }
                }
            }
        }
    }
    Ok(())
}

/// Writes every buffer of `run` to the socket, emptying it.
async fn write_all_vectored(
    socket: &tokio::net::TcpStream,
    run: &mut std::collections::VecDeque<Bytes>,
) -> std::io::Result<()> {
    use bytes::Buf;
    /// The most buffers one `writev` is given (Linux's `UIO_MAXIOV` is 1,024).
    const IOV_MAX: usize = 64;
    while !run.is_empty() {
        socket.writable().await?;
        let slices: Vec<std::io::IoSlice<'_>> =
            run.iter().take(IOV_MAX).map(|bytes| std::io::IoSlice::new(bytes)).collect();
        let mut written = match socket.try_write_vectored(&slices) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(written) => written,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(error),
        };
        while let Some(front) = run.front_mut() {
            if written < front.len() {
                front.advance(written);
                break;
            }
            written -= front.len();
            run.pop_front();
        }
    }
    Ok(())
}

/// Writes pieces to any stream, reading the files' bytes into memory (a TLS connection).
pub(crate) async fn write_pieces_copied<S: tokio::io::AsyncWrite + Unpin>(
    stream: &mut S,
    pieces: Vec<Piece>,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    for piece in pieces {
        match piece {
            Piece::Bytes(bytes) => stream.write_all(&bytes).await?,
            Piece::File(slice) => {
                let bytes = slice.read().map_err(std::io::Error::other)?;
                stream.write_all(&bytes).await?;
            }
        }
    }
    Ok(())
}
