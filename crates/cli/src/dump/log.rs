//! `.log` (and KRaft `.checkpoint`) files: the walk over entries, batch lines, progress.

use std::fmt::Write as _;
use std::io::{self, Write};

use seglog_format::batch::{HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use seglog_format::legacy::RECORD_OVERHEAD_V0;
use seglog_format::{Compression, LegacyEntry, RecordBatch, TimestampType};
use seglog_storage::io::{File, Fs, OpenMode, StdFs};

use super::records::{LineContext, entry_records, record_line};
use super::{
    Dumper, Format, JavaFile, MAX_BYTES_DEFAULT, PROGRESS_BYTES_MIN, Problem, SEGMENT_BYTES_MAX,
    Step, Stop, WINDOW_BYTES,
};

/// What the walker found next in a `.log`.
pub(super) enum Next<'w> {
    /// A whole entry at `position`.
    Entry { position: u64, bytes: &'w [u8] },
    /// Fewer than 18 bytes left, or a partial entry: Kafka stops here without an error.
    End,
    /// A size below 14: Kafka throws `CorruptRecordException`.
    TooSmall { position: u64, size: i32 },
    /// An entry larger than we read.
    TooLarge { position: u64, size_bytes: u64 },
}

/// Walks a `.log` up to `end` with Kafka's `FileLogInputStream` rules, reading it through a
/// window so that memory does not grow with the file.
pub(super) struct LogWalker {
    pub(super) file: Box<dyn File>,
    pub(super) end: u64,
    pub(super) window: Vec<u8>,
    /// File position of `window[0]`.
    pub(super) window_start: u64,
    /// Index in `window` of the next entry.
    pub(super) next_idx: usize,
    pub(super) batch_bytes_max: usize,
}

impl LogWalker {
    pub(super) fn new(file: Box<dyn File>, end: u64, batch_bytes_max: usize) -> Self {
        Self { file, end, window: Vec::new(), window_start: 0, next_idx: 0, batch_bytes_max }
    }

    pub(super) fn position(&self) -> u64 {
        self.window_start + self.next_idx as u64
    }

    /// Makes at least `needed` bytes available from `next_idx` (the caller checked `end`).
    pub(super) fn fill(&mut self, needed: usize) -> io::Result<()> {
        if self.window.len() - self.next_idx >= needed {
            return Ok(());
        }
        self.window.drain(..self.next_idx);
        self.window_start += self.next_idx as u64;
        self.next_idx = 0;
        if self.window.capacity() > 2 * WINDOW_BYTES && needed <= WINDOW_BYTES {
            self.window.shrink_to(WINDOW_BYTES);
        }
        let loaded = self.window.len();
        let file_left = self.end.saturating_sub(self.window_start + loaded as u64);
        let wanted = needed.max(WINDOW_BYTES).saturating_sub(loaded);
        let adding = usize::try_from(file_left).map_or(wanted, |left| left.min(wanted));
        self.window.resize(loaded + adding, 0);
        let position = self.window_start + loaded as u64;
        self.file.read_exact_at(self.window.get_mut(loaded..).unwrap_or_default(), position)
    }

    pub(super) fn next_entry(&mut self) -> io::Result<Next<'_>> {
        let position = self.position();
        if position + HEADER_SIZE_UP_TO_MAGIC as u64 >= self.end {
            return Ok(Next::End);
        }
        self.fill(HEADER_SIZE_UP_TO_MAGIC)?;
        let size = self
            .window
            .get(self.next_idx + 8..self.next_idx + 12)
            .and_then(|bytes| bytes.first_chunk::<4>())
            .map_or(0, |bytes| i32::from_be_bytes(*bytes));
        if size < RECORD_OVERHEAD_V0 as i32 {
            return Ok(Next::TooSmall { position, size });
        }
        let size_bytes = LOG_OVERHEAD as u64 + size as u64;
        if position + size_bytes > self.end {
            return Ok(Next::End);
        }
        if size_bytes > self.batch_bytes_max as u64 {
            return Ok(Next::TooLarge { position, size_bytes });
        }
        let entry_len = size_bytes as usize;
        self.fill(entry_len)?;
        let start = self.next_idx;
        self.next_idx += entry_len;
        Ok(Next::Entry {
            position,
            bytes: self.window.get(start..start + entry_len).unwrap_or_default(),
        })
    }
}

/// One log entry as Kafka's `FileChannelRecordBatch` sees it: magic 2 and above are v2 batches,
/// anything below is a legacy message.
#[derive(Debug, Clone, Copy)]
pub(super) enum Entry<'a> {
    V2(RecordBatch<'a>),
    Legacy(LegacyEntry<'a>),
}

impl<'a> Entry<'a> {
    pub(super) fn size_bytes(&self) -> usize {
        match self {
            Self::V2(batch) => batch.size_bytes(),
            Self::Legacy(entry) => entry.as_bytes().len(),
        }
    }

    pub(super) fn new(bytes: &'a [u8]) -> Result<Self, String> {
        let magic = bytes.get(16).map_or(0, |&byte| byte as i8);
        if magic >= 2 {
            RecordBatch::new(bytes).map(Self::V2).map_err(|error| error.to_string())
        } else {
            LegacyEntry::new(bytes).map(Self::Legacy).map_err(|error| error.to_string())
        }
    }

    pub(super) fn magic(&self) -> i8 {
        match self {
            Self::V2(batch) => batch.magic(),
            Self::Legacy(entry) => entry.magic(),
        }
    }

    pub(super) fn timestamp_type(&self) -> TimestampType {
        match self {
            Self::V2(batch) => batch.timestamp_type(),
            Self::Legacy(entry) => entry.timestamp_type(),
        }
    }

    pub(super) fn is_control(&self) -> bool {
        match self {
            Self::V2(batch) => batch.is_control_batch(),
            Self::Legacy(_) => false,
        }
    }

    /// The codec, as Kafka's `CompressionType.forId` reads it (zstd is nameable in any magic).
    pub(super) fn compression(&self) -> Result<Compression, String> {
        let id = match self {
            Self::V2(batch) => (batch.attributes() as u8) & 0x07,
            Self::Legacy(entry) => entry.attributes() & 0x07,
        };
        Compression::from_id(id).map_err(|_| format!("Unknown compression type id: {id}"))
    }

    /// Kafka's `isValid`: for v2 the size and the CRC-32C (not the magic), for legacy the CRC-32.
    pub(super) fn is_valid(&self) -> bool {
        match self {
            Self::V2(batch) => {
                batch.size_bytes() >= RECORD_BATCH_OVERHEAD && batch.crc() == batch.compute_crc()
            }
            Self::Legacy(entry) => entry.crc() == entry.compute_crc(),
        }
    }
}

/// Java's `OptionalLong.toString`.
pub(super) fn optional_long(value: Option<i64>) -> String {
    value.map_or_else(|| "OptionalLong.empty".to_owned(), |value| format!("OptionalLong[{value}]"))
}

/// Kafka's batch line (`printBatchLevel`), without its newline.
pub(super) fn batch_line(
    format: Format,
    entry: &Entry<'_>,
    position: u64,
) -> Result<String, String> {
    let codec = format.codec(entry.compression()?);
    let mut line = String::with_capacity(400);
    let (timestamp, size_bytes, crc) = match entry {
        Entry::V2(batch) => {
            let _ = write!(
                line,
                "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} \
                 producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {}",
                batch.base_offset(),
                batch.last_offset(),
                batch.records_count(),
                batch.base_sequence(),
                batch.last_sequence(),
                batch.producer_id(),
                batch.producer_epoch(),
                batch.partition_leader_epoch(),
                batch.is_transactional(),
            );
            if format.since(2, 1) {
                let _ = write!(line, " isControl: {}", batch.is_control_batch());
            }
            if format.since(3, 2) {
                let _ =
                    write!(line, " deleteHorizonMs: {}", optional_long(batch.delete_horizon_ms()));
            }
            (batch.max_timestamp(), batch.size_bytes(), batch.crc())
        }
        Entry::Legacy(legacy) => {
            let _ = write!(line, "offset: {}", legacy.offset());
            (legacy.timestamp(), legacy.as_bytes().len(), legacy.crc())
        }
    };
    let (timestamp_type, magic, is_valid) =
        (entry.timestamp_type(), entry.magic(), entry.is_valid());
    if format.since(2, 2) {
        let _ = write!(
            line,
            " position: {position} {timestamp_type}: {timestamp} size: {size_bytes} magic: {magic} \
             compresscodec: {codec} crc: {crc} isvalid: {is_valid}",
        );
    } else {
        let _ = write!(
            line,
            " position: {position} {timestamp_type}: {timestamp} isvalid: {is_valid} size: \
             {size_bytes} magic: {magic} compresscodec: {codec} crc: {crc}",
        );
    }
    Ok(line)
}

/// A progress bar on stderr for a large file, when stderr is a terminal.
pub(super) fn progress_bar(show: bool, len: u64, name: &str) -> Option<indicatif::ProgressBar> {
    if !show || len <= PROGRESS_BYTES_MIN {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(name.to_owned());
    Some(bar)
}

impl Dumper<'_> {
    pub(super) fn open(file: &JavaFile) -> Result<Box<dyn File>, Problem> {
        StdFs.open(&file.path, OpenMode::Read).map_err(|error| Problem::io(file, &error))
    }

    /// Kafka's `FileRecords.open`: refuses files above 2 GiB - 1.
    pub(super) fn open_records(file: &JavaFile) -> Result<(Box<dyn File>, u64), Problem> {
        let handle = Self::open(file)?;
        let len = handle.len().map_err(|error| Problem::io(file, &error))?;
        if len > SEGMENT_BYTES_MAX {
            return Err(Problem::new(format!(
                "The size of segment {} ({len}) is larger than the maximum allowed segment size \
                 of {}",
                file.shown,
                i32::MAX
            )));
        }
        Ok((handle, len))
    }

    pub(super) fn dump_log(&mut self, file: &JavaFile) -> Step {
        for notice in &self.options.parser_notices {
            writeln!(self.out, "{notice}")?;
        }
        #[expect(
            clippy::case_sensitive_file_extension_comparisons,
            reason = "Kafka's `endsWith` is case-sensitive"
        )]
        let is_log = file.name.ends_with(".log");
        if is_log {
            let start_offset = file.base_offset()?;
            writeln!(self.out, "{}: {start_offset}", self.options.format.log_header())?;
        } else if file.name == "bootstrap.checkpoint" {
            writeln!(self.out, "KRaft bootstrap snapshot")?;
        } else {
            let (offset, epoch) = parse_snapshot_name(&file.name).ok_or_else(|| {
                Problem::new(
                    "java.util.NoSuchElementException: No value present (not a snapshot name)",
                )
            })?;
            writeln!(self.out, "Snapshot end offset: {offset}, epoch: {epoch}")?;
        }
        let (handle, len) = Self::open_records(file)?;
        if self.options.max_bytes < 0 {
            return Err(Problem::new(format!("Invalid size: {}", self.options.max_bytes)).into());
        }
        let end = len.min(self.options.max_bytes as u64);
        let bar = progress_bar(self.show_progress, end, &file.name);
        let result = self.walk_log(file, handle, end, bar.as_ref());
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let valid_bytes = result?;
        let trailing_bytes = end - valid_bytes;
        // Since 3.3 (which added `--max-bytes`) only a whole-file dump reports trailing bytes.
        if trailing_bytes > 0 && self.options.max_bytes == MAX_BYTES_DEFAULT {
            self.problems = true;
            writeln!(self.out, "Found {trailing_bytes} invalid bytes at the end of {}", file.name)?;
        }
        Ok(())
    }

    /// Prints every batch up to `end`; returns the bytes of the whole batches dumped.
    pub(super) fn walk_log(
        &mut self,
        file: &JavaFile,
        handle: Box<dyn File>,
        end: u64,
        bar: Option<&indicatif::ProgressBar>,
    ) -> Step<u64> {
        let mut walker = LogWalker::new(handle, end, self.options.batch_bytes_max);
        let mut valid_bytes = 0u64;
        let mut last_offset = -1i64;
        loop {
            if let Some(bar) = bar {
                bar.set_position(walker.position());
            }
            let at = walker.position();
            let next = walker
                .next_entry()
                .map_err(|error| Problem::at(at, format!("cannot read: {error}")));
            let (position, bytes) =
                match next? {
                    Next::End => return Ok(valid_bytes),
                    Next::TooSmall { position, size } => {
                        self.suspend_report(
                            bar,
                            file,
                            &Problem::at(
                                position,
                                format!(
                                    "Found record size {size} smaller than minimum record overhead \
                             ({RECORD_OVERHEAD_V0}) in file {}.",
                                    file.shown
                                ),
                            ),
                        )?;
                        return Ok(valid_bytes);
                    }
                    Next::TooLarge { position, size_bytes } => {
                        self.suspend_report(bar, file, &Problem::at(
                        position,
                        format!(
                            "batch of {size_bytes} bytes is larger than the {} bytes read at \
                             once (raise --max-message-size)",
                            self.options.batch_bytes_max
                        ),
                    ))?;
                        return Ok(valid_bytes);
                    }
                    Next::Entry { position, bytes } => (position, bytes),
                };
            let size_bytes = bytes.len() as u64;
            let entry = match Entry::new(bytes) {
                Ok(entry) => entry,
                Err(message) => {
                    // Kafka reads such a batch's header past its end; we skip it.
                    self.suspend_report(bar, file, &Problem::at(position, message))?;
                    valid_bytes += size_bytes;
                    continue;
                }
            };
            let format = self.options.format;
            match batch_line(format, &entry, valid_bytes) {
                // Up to Kafka 2.1, deep iteration prints record lines instead.
                Ok(_)
                    if self.options.deep_iteration && format.record_lines_replace_batch_lines() => {
                }
                Ok(line) => writeln!(self.out, "{line}")?,
                Err(message) => {
                    self.suspend_report(bar, file, &Problem::at(position, message))?;
                    valid_bytes += size_bytes;
                    continue;
                }
            }
            if !entry.is_valid() {
                self.problems = true;
            }
            if self.options.deep_iteration {
                let result = self.dump_records(file, &entry, valid_bytes, &mut last_offset);
                match result {
                    Ok(()) => {}
                    Err(Stop::Output(error)) => return Err(Stop::Output(error)),
                    Err(Stop::Problem(problem)) => {
                        let problem = Problem::at(position, problem.message);
                        self.suspend_report(bar, file, &problem)?;
                    }
                }
            }
            valid_bytes += size_bytes;
        }
    }

    pub(super) fn suspend_report(
        &mut self,
        bar: Option<&indicatif::ProgressBar>,
        file: &JavaFile,
        problem: &Problem,
    ) -> io::Result<()> {
        match bar {
            Some(bar) => bar.suspend(|| self.report(file, problem)),
            None => self.report(file, problem),
        }
    }

    pub(super) fn dump_records(
        &mut self,
        file: &JavaFile,
        entry: &Entry<'_>,
        position: u64,
        last_offset: &mut i64,
    ) -> Step {
        let options = &self.options;
        let context = LineContext { options, entry, position };
        let out = &mut self.out;
        let non_consecutive = &mut self.non_consecutive;
        entry_records(entry, options.limits, &mut |dump| {
            let offset = dump.record.offset;
            if *last_offset != -1 && offset != last_offset.wrapping_add(1) {
                non_consecutive.push(&file.absolute, (*last_offset, offset));
            }
            *last_offset = offset;
            let line = record_line(&context, &dump).map_err(Problem::new)?;
            writeln!(out, "{line}")?;
            Ok(())
        })
    }
}

/// `<20 digits>-<10 digits>.checkpoint` (or `.checkpoint.partial`/`.deleted`, as Kafka's
/// `Snapshots.parse`): the end offset and epoch.
pub(super) fn parse_snapshot_name(name: &str) -> Option<(i64, i32)> {
    let offset = name.get(..20)?.parse::<i64>().ok()?;
    let epoch = name.get(21..31)?.parse::<i32>().ok()?;
    Some((offset, epoch))
}

#[cfg(test)]
mod tests {
    use super::super::KafkaVersion;
    use super::*;

    #[test]
    fn legacy_batch_line_names_zstd_like_kafka() {
        // A v1 message with codec bits 4: Kafka's `CompressionType.forId(4)` prints zstd.
        let mut entry = hex_bytes(
            "0000000000000007 0000001b 00000000 01 04 0000018bcfe56800 ffffffff 00000005 68656c6c6f",
        );
        let crc = crc32_ieee(&entry[16..]);
        entry[12..16].copy_from_slice(&crc.to_be_bytes());
        let entry = Entry::new(&entry).unwrap();
        assert_eq!(
            batch_line(Format { version: KafkaVersion::CURRENT }, &entry, 99).unwrap(),
            format!(
                "offset: 7 position: 99 CreateTime: 1700000000000 size: 39 magic: 1 compresscodec: \
                 zstd crc: {crc} isvalid: true"
            )
        );
    }

    fn hex_bytes(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    fn crc32_ieee(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }
}
