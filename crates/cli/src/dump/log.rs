//! `.log` (and KRaft `.checkpoint`) files: the walk over entries, batch lines, progress.

use std::fmt::Write as _;
use std::io::{self, Write};

use seglog_format::batch::RECORD_BATCH_OVERHEAD;
use seglog_format::legacy::RECORD_OVERHEAD_V0;
use seglog_format::{Batch, Compression};
use seglog_storage::io::{File, Fs, OpenMode, StdFs};
use seglog_storage::segment::{Frame, HeaderScan, SEGMENT_BYTES_LIMIT};

use super::records::{LineContext, entry_records, record_line};
use super::{Dumper, Format, JavaFile, MAX_BYTES_DEFAULT, PROGRESS_BYTES_MIN, Problem, Step, Stop};

/// An entry as Kafka's `FileLogInputStream` reads it (magic 2 and above as a v2 batch).
pub(super) fn parse_entry(bytes: &[u8]) -> Result<Batch<'_>, String> {
    Batch::new_any_magic(bytes).map_err(|error| error.to_string())
}

/// The codec, as Kafka's `CompressionType.forId` reads the codec bits (zstd is nameable in any
/// magic).
pub(super) fn kafka_compression(entry: &Batch<'_>) -> Result<Compression, String> {
    let id = match entry {
        Batch::V2(batch) => (batch.attributes() as u8) & 0x07,
        Batch::Legacy(legacy) => legacy.attributes() & 0x07,
    };
    Compression::from_id(id).map_err(|_| format!("Unknown compression type id: {id}"))
}

/// Kafka's `isValid`: for v2 the size and the CRC-32C (not the magic, which seglog's
/// [`Batch::is_valid`] also checks), for legacy the CRC-32.
pub(super) fn kafka_is_valid(entry: &Batch<'_>) -> bool {
    match entry {
        Batch::V2(batch) => {
            batch.size_bytes() >= RECORD_BATCH_OVERHEAD && batch.crc() == batch.compute_crc()
        }
        Batch::Legacy(legacy) => legacy.crc() == legacy.compute_crc(),
    }
}

/// Java's `OptionalLong.toString`.
pub(super) fn optional_long(value: Option<i64>) -> String {
    value.map_or_else(|| "OptionalLong.empty".to_owned(), |value| format!("OptionalLong[{value}]"))
}

/// Kafka's batch line (`printBatchLevel`), without its newline.
pub(super) fn batch_line(
    format: Format,
    entry: &Batch<'_>,
    position: u64,
) -> Result<String, String> {
    let codec = format.codec(kafka_compression(entry)?);
    let mut line = String::with_capacity(400);
    let (timestamp, size_bytes, crc) = match entry {
        Batch::V2(batch) => {
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
        Batch::Legacy(legacy) => {
            let _ = write!(line, "offset: {}", legacy.offset());
            (legacy.timestamp(), legacy.as_bytes().len(), legacy.crc())
        }
    };
    let (timestamp_type, magic, is_valid) =
        (entry.timestamp_type(), entry.magic(), kafka_is_valid(entry));
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
        if len > SEGMENT_BYTES_LIMIT {
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
        let result = self.walk_log(file, handle.as_ref(), end, bar.as_ref());
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

    /// Prints every batch up to `end`; returns the bytes of the whole batches dumped. The walk
    /// is storage's [`HeaderScan`], framing only (Kafka's `FileLogInputStream`), so that a
    /// damaged entry is reported at its position and the walk goes on, as Kafka's does.
    pub(super) fn walk_log(
        &mut self,
        file: &JavaFile,
        handle: &dyn File,
        end: u64,
        bar: Option<&indicatif::ProgressBar>,
    ) -> Step<u64> {
        // `open_records` refused files above 2 GiB - 1.
        let mut scan = HeaderScan::new(handle, 0, u32::try_from(end).unwrap_or(u32::MAX));
        let mut valid_bytes = 0u64;
        let mut last_offset = -1i64;
        loop {
            let at = u64::from(scan.position());
            if let Some(bar) = bar {
                bar.set_position(at);
            }
            let cannot_read =
                |error: seglog_storage::Error| Problem::at(at, format!("cannot read: {error}"));
            let frame = match scan.next_frame(&file.path).map_err(cannot_read)? {
                Frame::End => return Ok(valid_bytes),
                Frame::TooSmall { position, size } => {
                    let message = format!(
                        "Found record size {size} smaller than minimum record overhead \
                         ({RECORD_OVERHEAD_V0}) in file {}.",
                        file.shown
                    );
                    self.suspend_report(bar, file, &Problem::at(u64::from(position), message))?;
                    return Ok(valid_bytes);
                }
                Frame::Entry(frame) if frame.size_bytes as usize > self.options.batch_bytes_max => {
                    let message = format!(
                        "batch of {} bytes is larger than the {} bytes read at once (raise \
                         --max-message-size)",
                        frame.size_bytes, self.options.batch_bytes_max
                    );
                    self.suspend_report(bar, file, &Problem::at(at, message))?;
                    return Ok(valid_bytes);
                }
                Frame::Entry(frame) => frame,
            };
            let bytes = scan.entry_bytes(frame, &file.path).map_err(cannot_read)?;
            let position = u64::from(frame.position);
            let size_bytes = u64::from(frame.size_bytes);
            // Kafka prints `validBytes` as a batch's position: the walk starts at 0 and counts
            // every entry, parsed or not, so the two agree.
            assert_eq!(position, valid_bytes, "the walk skipped bytes");
            match parse_entry(bytes) {
                Ok(entry) => self.dump_entry(file, &entry, valid_bytes, &mut last_offset, bar)?,
                // Kafka reads such a batch's header past its end; we skip it.
                Err(message) => self.suspend_report(bar, file, &Problem::at(position, message))?,
            }
            valid_bytes += size_bytes;
        }
    }

    /// Prints one entry (at `position` among the valid bytes) and, with deep iteration, its
    /// records; a problem is reported at the entry's position.
    fn dump_entry(
        &mut self,
        file: &JavaFile,
        entry: &Batch<'_>,
        position: u64,
        last_offset: &mut i64,
        bar: Option<&indicatif::ProgressBar>,
    ) -> Step {
        let format = self.options.format;
        match batch_line(format, entry, position) {
            // Up to Kafka 2.1, deep iteration prints record lines instead.
            Ok(_) if self.options.deep_iteration && format.record_lines_replace_batch_lines() => {}
            Ok(line) => writeln!(self.out, "{line}")?,
            Err(message) => {
                return Ok(self.suspend_report(bar, file, &Problem::at(position, message))?);
            }
        }
        if !kafka_is_valid(entry) {
            self.problems = true;
        }
        if self.options.deep_iteration {
            match self.dump_records(file, entry, position, last_offset) {
                Ok(()) => {}
                Err(Stop::Output(error)) => return Err(Stop::Output(error)),
                Err(Stop::Problem(problem)) => {
                    let problem = Problem::at(position, problem.message);
                    self.suspend_report(bar, file, &problem)?;
                }
            }
        }
        Ok(())
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
        entry: &Batch<'_>,
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
        let entry = parse_entry(&entry).unwrap();
        assert_eq!(
            batch_line(Format { version: KafkaVersion::CURRENT }, &entry, 99).unwrap(),
            format!(
                "offset: 7 position: 99 CreateTime: 1700000000000 size: 39 magic: 1 compresscodec: \
                 zstd crc: {crc} isvalid: true"
            )
        );
    }

    #[test]
    fn magic_above_two_is_a_batch_kafka_calls_valid() {
        // Kafka reads magic 3 as a v2 batch and its `isValid` checks the CRC-32C (which does
        // not cover the magic), not the magic; seglog's own `Batch::is_valid` refuses it.
        let mut builder = seglog_format::RecordBatchBuilder::new(Compression::None);
        builder.push(1_700_000_000_000, None, Some(b"v"), &[]).unwrap();
        let mut bytes = builder.build().unwrap();
        bytes[16] = 3;
        let entry = parse_entry(&bytes).unwrap();
        assert!(kafka_is_valid(&entry) && !entry.is_valid());
        assert_eq!(kafka_compression(&entry), Ok(Compression::None));
        let line = batch_line(Format { version: KafkaVersion::CURRENT }, &entry, 0).unwrap();
        assert!(line.contains(" size: 69 magic: 3 compresscodec: none crc: "), "{line}");
        assert!(line.ends_with("isvalid: true"), "{line}");
        // A codec id Kafka does not know is the error Kafka's `forId` throws.
        bytes[22] |= 0x07;
        let entry = parse_entry(&bytes).unwrap();
        assert_eq!(kafka_compression(&entry), Err("Unknown compression type id: 7".to_owned()));
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
