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

/// The `.leader-epoch-checkpoint` object of the segment `[base_offset, last_offset]`, from the
/// log's leader epochs (`(epoch, start offset)`, ascending): the epoch in force at the base
/// offset (starting there), then each epoch that starts inside the segment (Kafka's
/// `RemoteLogSegmentMetadata.segmentLeaderEpochs`). `None` when the log knows no epoch.
pub fn leader_epoch_slice(
    epochs: &[(i32, i64)],
    base_offset: i64,
    last_offset: i64,
) -> Option<Bytes> {
    use seglog_format::checkpoint::{EpochEntry, write_leader_epoch_checkpoint};
    let at_base = epochs.iter().rev().find(|(_, start)| *start <= base_offset);
    let mut slice: Vec<EpochEntry> = at_base
        .map(|(epoch, _)| EpochEntry { epoch: *epoch, start_offset: base_offset })
        .into_iter()
        .collect();
    slice.extend(
        epochs
            .iter()
            .filter(|(_, start)| *start > base_offset && *start <= last_offset)
            .map(|(epoch, start)| EpochEntry { epoch: *epoch, start_offset: *start }),
    );
    (!slice.is_empty()).then(|| Bytes::from(write_leader_epoch_checkpoint(&slice)))
}

#[cfg(test)]
mod tests {
    use super::leader_epoch_slice;

    #[test]
    fn the_slice_holds_the_epoch_at_the_base_and_those_starting_inside() {
        let epochs = [(0, 0), (3, 40), (5, 90), (6, 200)];
        let text =
            |bytes: Option<bytes::Bytes>| bytes.map(|b| String::from_utf8_lossy(&b).into_owned());
        assert_eq!(
            text(leader_epoch_slice(&epochs, 50, 120)),
            Some("0\n2\n3 50\n5 90\n".to_owned())
        );
        assert_eq!(text(leader_epoch_slice(&epochs, 0, 39)), Some("0\n1\n0 0\n".to_owned()));
        assert_eq!(leader_epoch_slice(&[], 0, 10), None);
    }
}
