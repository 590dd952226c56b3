//! A forward scan over the batch headers of a `.log` file, reading a window at a time, so that
//! offset translation and recovery never read more than they need (Kafka's `FileLogInputStream`
//! header reads, batched).

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

    /// The header bytes at the current position (up to 61), refilling the window when needed.
    fn header_bytes(&mut self, path: &std::path::Path) -> Result<&[u8]> {
        let wanted = (RECORD_BATCH_OVERHEAD as u32).min(self.end - self.position) as usize;
        let offset = (self.position - self.window_start) as usize;
        if offset + wanted > self.window.len() || self.position < self.window_start {
            let next = (self.window.len() * 2).clamp(FIRST_WINDOW_BYTES, WINDOW_BYTES);
            let len = (next as u32).min(self.end - self.position) as usize;
            self.window.resize(len, 0);
            self.file
                .read_exact_at(&mut self.window, u64::from(self.position))
                .map_err(|e| Error::io("read log", path, e))?;
            self.window_start = self.position;
        }
        let offset = (self.position - self.window_start) as usize;
        Ok(self.window.get(offset..offset + wanted).unwrap_or_default())
    }

    /// The next entry header, or `None` at the end (see [`HeaderScan::ended`]).
    pub fn next_header(&mut self, path: &std::path::Path) -> Result<Option<EntryHeader>> {
        if self.ended.is_some() {
            return Ok(None);
        }
        if self.end - self.position <= HEADER_SIZE_UP_TO_MAGIC as u32 {
            self.ended = Some(ScanEnd::End);
            return Ok(None);
        }
        let position = self.position;
        let remaining = self.end - position;
        let header = self.header_bytes(path)?;
        let base_offset = i64::from_be_bytes(be(header, 0));
        let size = i32::from_be_bytes(be(header, 8));
        let magic = i8::from_be_bytes(be(header, 16));
        let corrupt = |reason: String| Some(ScanEnd::Corrupt { position, reason });
        if size < RECORD_OVERHEAD_V0 as i32 {
            self.ended = corrupt(format!("entry size {size} is smaller than the minimum 14"));
            return Ok(None);
        }
        let size_bytes = LOG_OVERHEAD as u64 + size as u64;
        if size_bytes > u64::from(remaining) {
            self.ended = Some(ScanEnd::End);
            return Ok(None);
        }
        let parsed = match magic {
            2 => {
                if size_bytes < RECORD_BATCH_OVERHEAD as u64 {
                    self.ended = corrupt(format!("batch size {size_bytes} is smaller than 61"));
                    return Ok(None);
                }
                EntryHeader {
                    position,
                    size_bytes: size_bytes as u32,
                    magic,
                    last_offset: base_offset
                        .wrapping_add(i64::from(i32::from_be_bytes(be(header, 23)))),
                    max_timestamp: i64::from_be_bytes(be(header, 35)),
                    partition_leader_epoch: i32::from_be_bytes(be(header, 12)),
                    base_offset,
                    producer_id: i64::from_be_bytes(be(header, 43)),
                    producer_epoch: i16::from_be_bytes(be(header, 51)),
                    base_sequence: i32::from_be_bytes(be(header, 53)),
                }
            }
            0 | 1 => EntryHeader {
                position,
                size_bytes: size_bytes as u32,
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
