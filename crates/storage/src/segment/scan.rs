//! A forward scan over the batch headers of a `.log` file, reading a window at a time, so that
//! offset translation and recovery never read more than they need (Kafka's `FileLogInputStream`
//! header reads, batched). [`HeaderScan::next_frame`] and [`HeaderScan::entry_bytes`] give the
//! framing alone and whole entries through the same window, for `seglog dump`.

use seglog_format::batch::{HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use seglog_format::legacy::RECORD_OVERHEAD_V0;

use crate::error::{Error, Result};
use crate::io::File;

/// The most bytes read per window; a header never spans more than 61 bytes.
const WINDOW_BYTES: usize = 16 * 1024;
/// The first window: an offset lookup usually needs only the header at the indexed position,
/// so the scan starts small and doubles its window on every refill up to [`WINDOW_BYTES`].
const FIRST_WINDOW_BYTES: usize = 512;

/// What the header of one entry says, without reading its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// Byte position of the entry.
    pub position: u32,
    /// Bytes of the entry, prefix included.
    pub size_bytes: u32,
    /// The magic byte.
    pub magic: i8,
    /// The entry's last offset.
    pub last_offset: i64,
    /// The largest timestamp (v2 `maxTimestamp`, v1 timestamp, -1 for v0).
    pub max_timestamp: i64,
    /// `partitionLeaderEpoch` for v2, -1 otherwise.
    pub partition_leader_epoch: i32,
    /// `baseOffset` for v2; the entry offset for legacy entries.
    pub base_offset: i64,
    /// `producerId` for v2, -1 otherwise.
    pub producer_id: i64,
    /// `producerEpoch` for v2, -1 otherwise.
    pub producer_epoch: i16,
    /// `baseSequence` for v2, -1 otherwise.
    pub base_sequence: i32,
    /// `attributes` for v2 (bit 4 transactional, bit 5 control), 0 otherwise.
    pub attributes: i16,
}

/// One entry's place and size, from its first 17 bytes only (offset, size, magic), as Kafka's
/// `FileLogInputStream` frames entries before it reads a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryFrame {
    /// Byte position of the entry.
    pub position: u32,
    /// Bytes of the entry, prefix included (at least 26).
    pub size_bytes: u32,
    /// The offset field: a v2 batch's `baseOffset`, a legacy message's offset.
    pub base_offset: i64,
    /// The magic byte, unchecked.
    pub magic: i8,
}

/// What [`HeaderScan::next_frame`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A whole entry.
    Entry(EntryFrame),
    /// The end of the scan, or a partial trailing entry (Kafka's rule: not an error).
    End,
    /// A size field below the smallest entry (14): Kafka's `CorruptRecordException`.
    TooSmall { position: u32, size: i32 },
}

/// Why a scan stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanEnd {
    /// The end of the file, or a partial trailing entry (Kafka's rule: not an error).
    End,
    /// An entry header is impossible: a size below 14, an unknown magic, a v2 size below 61.
    Corrupt { position: u32, reason: String },
}

/// Iterates entry headers from a start position up to an end position.
#[derive(Debug)]
pub struct HeaderScan<'a> {
    file: &'a dyn File,
    position: u32,
    end: u32,
    window: Vec<u8>,
    window_start: u32,
    ended: Option<ScanEnd>,
}

fn be<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut array = [0u8; N];
    if let Some(slice) = bytes.get(at..at + N) {
        array.copy_from_slice(slice);
    }
    array
}

impl<'a> HeaderScan<'a> {
    /// Scans `file` from `start` to `end` (the segment's logical size). A `start` past `end` (an
    /// index entry pointing beyond a torn `.log`) scans nothing, as in Kafka's `batchesFrom`.
    pub fn new(file: &'a dyn File, start: u32, end: u32) -> Self {
        let start = start.min(end);
        Self { file, position: start, end, window: Vec::new(), window_start: start, ended: None }
    }

    /// Where the scan is: after the last entry returned.
    pub fn position(&self) -> u32 {
        self.position
    }

    /// Why the scan ended, once it has.
    pub fn ended(&self) -> Option<&ScanEnd> {
        self.ended.as_ref()
    }

    /// The bytes `[position, position + wanted)` (the caller checked them against `end`),
    /// refilling the window from `position` when they are not all in it. A refill reads at least
    /// `wanted` bytes, growing the window for an entry larger than it.
    fn window_at(&mut self, position: u32, wanted: usize, path: &std::path::Path) -> Result<&[u8]> {
        let in_window = position >= self.window_start
            && (position - self.window_start) as usize + wanted <= self.window.len();
        if !in_window {
            let next = (self.window.len() * 2).clamp(FIRST_WINDOW_BYTES, WINDOW_BYTES).max(wanted);
            let len = (next as u32).min(self.end - position) as usize;
            if self.window.capacity() > 2 * WINDOW_BYTES && len <= WINDOW_BYTES {
                // A large entry grew the window; give the memory back.
                self.window = Vec::new();
            }
            self.window.resize(len, 0);
            self.file
                .read_exact_at(&mut self.window, u64::from(position))
                .map_err(|e| Error::io("read log", path, e))?;
            self.window_start = position;
        }
        let offset = (position - self.window_start) as usize;
        Ok(self.window.get(offset..offset + wanted).unwrap_or_default())
    }

    /// The next entry's frame, without moving: Kafka's `FileLogInputStream.nextBatch`, which
    /// reads the offset, size and magic, stops quietly at a partial entry and throws at a size
    /// below 14.
    fn peek_frame(&mut self, path: &std::path::Path) -> Result<Frame> {
        if self.end - self.position <= HEADER_SIZE_UP_TO_MAGIC as u32 {
            return Ok(Frame::End);
        }
        let position = self.position;
        let remaining = self.end - position;
        let header = self.window_at(position, HEADER_SIZE_UP_TO_MAGIC, path)?;
        let base_offset = i64::from_be_bytes(be(header, 0));
        let size = i32::from_be_bytes(be(header, 8));
        let magic = i8::from_be_bytes(be(header, 16));
        if size < RECORD_OVERHEAD_V0 as i32 {
            return Ok(Frame::TooSmall { position, size });
        }
        let size_bytes = LOG_OVERHEAD as u64 + size as u64;
        if size_bytes > u64::from(remaining) {
            return Ok(Frame::End);
        }
        Ok(Frame::Entry(EntryFrame { position, size_bytes: size_bytes as u32, base_offset, magic }))
    }

    /// The next entry's frame, moving past it: the framing alone, whatever the magic and the
    /// header say (for tools that report a damaged entry and go on, as `kafka-dump-log` does).
    /// After [`Frame::End`] or [`Frame::TooSmall`] the scan has ended (see [`HeaderScan::ended`]).
    pub fn next_frame(&mut self, path: &std::path::Path) -> Result<Frame> {
        if self.ended.is_some() {
            return Ok(Frame::End);
        }
        let frame = self.peek_frame(path)?;
        match frame {
            Frame::Entry(entry) => self.position += entry.size_bytes,
            Frame::End => self.ended = Some(ScanEnd::End),
            Frame::TooSmall { position, size } => self.ended = Some(too_small(position, size)),
        }
        Ok(frame)
    }

    /// The bytes of an entry framed by this scan, read through the window (one read for an
    /// entry larger than it; the caller bounds `size_bytes`).
    pub fn entry_bytes(&mut self, frame: EntryFrame, path: &std::path::Path) -> Result<&[u8]> {
        assert!(frame.position + frame.size_bytes <= self.end, "{frame:?} is past the scan's end");
        self.window_at(frame.position, frame.size_bytes as usize, path)
    }

    /// The next entry header, or `None` at the end (see [`HeaderScan::ended`]).
    pub fn next_header(&mut self, path: &std::path::Path) -> Result<Option<EntryHeader>> {
        if self.ended.is_some() {
            return Ok(None);
        }
        let frame = match self.peek_frame(path)? {
            Frame::Entry(frame) => frame,
            Frame::End => {
                self.ended = Some(ScanEnd::End);
                return Ok(None);
            }
            Frame::TooSmall { position, size } => {
                self.ended = Some(too_small(position, size));
                return Ok(None);
            }
        };
        let EntryFrame { position, size_bytes, base_offset, magic } = frame;
        let wanted = (RECORD_BATCH_OVERHEAD as u32).min(self.end - position) as usize;
        let header = self.window_at(position, wanted, path)?;
        let corrupt = |reason: String| Some(ScanEnd::Corrupt { position, reason });
        let parsed = match magic {
            2 => {
                if size_bytes < RECORD_BATCH_OVERHEAD as u32 {
                    self.ended = corrupt(format!("batch size {size_bytes} is smaller than 61"));
                    return Ok(None);
                }
                EntryHeader {
                    position,
                    size_bytes,
                    magic,
                    last_offset: base_offset
                        .wrapping_add(i64::from(i32::from_be_bytes(be(header, 23)))),
                    max_timestamp: i64::from_be_bytes(be(header, 35)),
                    partition_leader_epoch: i32::from_be_bytes(be(header, 12)),
                    base_offset,
                    producer_id: i64::from_be_bytes(be(header, 43)),
                    producer_epoch: i16::from_be_bytes(be(header, 51)),
                    base_sequence: i32::from_be_bytes(be(header, 53)),
                    attributes: i16::from_be_bytes(be(header, 21)),
                }
            }
            0 | 1 => EntryHeader {
                position,
                size_bytes,
                magic,
                last_offset: base_offset,
                max_timestamp: if magic == 1 && header.len() >= 26 {
                    i64::from_be_bytes(be(header, 18))
                } else {
                    -1
                },
                partition_leader_epoch: -1,
                base_offset,
                producer_id: -1,
                producer_epoch: -1,
                base_sequence: -1,
                attributes: 0,
            },
            other => {
                self.ended = corrupt(format!("unsupported magic byte {other}"));
                return Ok(None);
            }
        };
        self.position += parsed.size_bytes;
        Ok(Some(parsed))
    }
}

fn too_small(position: u32, size: i32) -> ScanEnd {
    ScanEnd::Corrupt {
        position,
        reason: format!("entry size {size} is smaller than the minimum 14"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use seglog_format::{Compression, RecordBatchBuilder};

    use super::*;
    use crate::io::{Fs, OpenMode, SimFs};

    fn file_with(bytes: &[u8]) -> Box<dyn File> {
        let fs = SimFs::new();
        let file = fs.open(Path::new("/s.log"), OpenMode::CreateNew).unwrap();
        file.write_all_at(bytes, 0).unwrap();
        file
    }

    #[test]
    fn frames_and_entries_through_the_window() {
        let mut log = Vec::new();
        for base_offset in [0i64, 3] {
            let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(base_offset);
            for value in [vec![1u8; 10_000], vec![2u8; 30], vec![3u8; 7]] {
                builder.push(1_000, None, Some(&value), &[]).unwrap();
            }
            log.extend_from_slice(&builder.build().unwrap());
        }
        let first_len = u32::try_from(log.len() / 2).unwrap();
        log.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0, 0, 2, 0]);
        let file = file_with(&log);
        let end = u32::try_from(log.len()).unwrap();
        let path = Path::new("/s.log");
        let mut scan = HeaderScan::new(file.as_ref(), 0, end);
        let Frame::Entry(first) = scan.next_frame(path).unwrap() else { panic!("no entry") };
        assert_eq!((first.position, first.size_bytes, first.base_offset), (0, first_len, 0));
        assert_eq!(scan.entry_bytes(first, path).unwrap(), log.get(..first_len as usize).unwrap());
        let Frame::Entry(second) = scan.next_frame(path).unwrap() else { panic!("no entry") };
        assert_eq!((second.position, second.base_offset, second.magic), (first_len, 3, 2));
        let bytes = scan.entry_bytes(second, path).unwrap().to_vec();
        assert_eq!(bytes, log.get(first_len as usize..2 * first_len as usize).unwrap());
        assert_eq!(
            scan.next_frame(path).unwrap(),
            Frame::TooSmall { position: 2 * first_len, size: 5 }
        );
        assert_eq!(scan.next_frame(path).unwrap(), Frame::End);
        assert_eq!(scan.ended(), Some(&too_small(2 * first_len, 5)));
        // The header scan sees the same entries.
        let mut scan = HeaderScan::new(file.as_ref(), 0, end);
        assert_eq!(scan.next_header(path).unwrap().unwrap().last_offset, 2);
        assert_eq!(scan.next_header(path).unwrap().unwrap().last_offset, 5);
        assert_eq!(scan.next_header(path).unwrap(), None);
    }

    #[test]
    fn a_partial_entry_ends_the_frames_quietly() {
        let mut header = vec![0u8; 17];
        header[8..12].copy_from_slice(&100i32.to_be_bytes());
        header[16] = 7;
        header.extend_from_slice(&[0; 20]);
        let file = file_with(&header);
        let mut scan = HeaderScan::new(file.as_ref(), 0, 37);
        assert_eq!(scan.next_frame(Path::new("/s.log")).unwrap(), Frame::End);
        assert_eq!(scan.ended(), Some(&ScanEnd::End));
    }
}
