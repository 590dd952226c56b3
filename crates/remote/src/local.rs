//! A closed local segment's files, read through storage's `Fs`, as the objects of an upload.

use std::path::Path;

use bytes::Bytes;
use seglog_format::names::{FileKind, SegmentFileName};
use seglog_storage::io::{Fs, OpenMode};

use crate::error::{RemoteError, Result};
use crate::layout::ObjectKind;

/// The largest local file read for an upload (a segment is at most 2 GiB, as Kafka's).
const FILE_BYTES_MAX: u64 = i32::MAX as u64;

/// The local file kind of each object kind that comes from a segment file.
fn file_kind(kind: ObjectKind) -> Option<FileKind> {
    match kind {
        ObjectKind::Log => Some(FileKind::Log),
        ObjectKind::Index => Some(FileKind::Index),
        ObjectKind::TimeIndex => Some(FileKind::TimeIndex),
        ObjectKind::TxnIndex => Some(FileKind::TxnIndex),
        ObjectKind::ProducerSnapshot => Some(FileKind::Snapshot),
        ObjectKind::LeaderEpochs => None,
    }
}

/// The files of the closed segment at `base_offset` in the partition directory `dir`, byte for
/// byte: its `.log` (which must exist), and its `.index`, `.timeindex`, `.txnindex` and the
/// producer snapshot named by `snapshot_offset` (the segment's end) where they exist.
pub fn read_segment_files(
    fs: &dyn Fs,
    dir: &Path,
    base_offset: i64,
    snapshot_offset: i64,
) -> Result<Vec<(ObjectKind, Bytes)>> {
    let mut objects = Vec::new();
    for kind in ObjectKind::ALL {
        let Some(file_kind) = file_kind(kind) else { continue };
        let offset =
            if kind == ObjectKind::ProducerSnapshot { snapshot_offset } else { base_offset };
        let name = SegmentFileName::new(offset, file_kind).to_name();
        let path = dir.join(&name);
        let file = match fs.open(&path, OpenMode::Read) {
            Ok(file) => file,
            Err(error)
                if error.kind() == std::io::ErrorKind::NotFound && kind != ObjectKind::Log =>
            {
                continue;
            }
            Err(source) => return Err(RemoteError::Local { op: "open", path, source }),
        };
        let len = file.len().map_err(|source| RemoteError::Local {
            op: "stat",
            path: path.clone(),
            source,
        })?;
        if len > FILE_BYTES_MAX {
            return Err(RemoteError::Local {
                op: "read",
                path: path.clone(),
                source: std::io::Error::other(format!(
                    "{len} bytes, more than a segment file can be"
                )),
            });
        }
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, 0).map_err(|source| RemoteError::Local {
            op: "read",
            path: path.clone(),
            source,
        })?;
        objects.push((kind, Bytes::from(bytes)));
    }
    Ok(objects)
}
