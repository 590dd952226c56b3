//! Producer-state `.snapshot` files, printed and their corruption worded as Kafka does.

use std::io::Write;

use super::{Dumper, JavaFile, Problem, Step};

impl Dumper<'_> {
    pub(super) fn dump_producer_snapshot(&mut self, file: &JavaFile) -> Step {
        let handle = Self::open(file)?;
        let bytes = seglog_storage::io::read_all(handle.as_ref())
            .map_err(|error| Problem::io(file, &error))?;
        match producer_snapshot::read(&bytes) {
            Ok(entries) => {
                for entry in entries {
                    writeln!(self.out, "{}", producer_snapshot::line(self.options.format, &entry))?;
                }
                Ok(())
            }
            Err(message) => {
                // Kafka catches `CorruptSnapshotException` and prints its message on stderr.
                self.problems = true;
                self.out.flush()?;
                writeln!(self.err, "{message}")?;
                Ok(())
            }
        }
    }
}

/// Kafka's producer-state snapshot (spec section 3.9, `ProducerStateManager.readSnapshot`): the
/// codec is `seglog_format::producer_snapshot`; this module words its errors and lines as Kafka
/// does.
mod producer_snapshot {
    use std::fmt::Write as _;

    use seglog_format::{DecodeError, ProducerSnapshotEntry, decode_producer_snapshot};

    /// Parses and checks a snapshot; `Err` is the `CorruptSnapshotException` message.
    pub(super) fn read(bytes: &[u8]) -> Result<Vec<ProducerSnapshotEntry>, String> {
        decode_producer_snapshot(bytes).map_err(|error| corrupt_snapshot_message(&error))
    }

    /// The message of Kafka's `CorruptSnapshotException` for a snapshot that did not decode.
    fn corrupt_snapshot_message(error: &DecodeError) -> String {
        match error {
            DecodeError::UnsupportedVersion { version, .. } => {
                format!("Snapshot contained an unknown file version {version}")
            }
            DecodeError::CrcMismatch { stored, computed } => format!(
                "Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed}"
            ),
            other => format!("Snapshot failed schema validation: {}", schema_message(other)),
        }
    }

    /// The message of Kafka's `SchemaException` (`Schema.read`, `ArrayOf.read`).
    fn schema_message(error: &DecodeError) -> String {
        match error {
            DecodeError::SchemaField { field, source } => {
                format!("Error reading field '{field}': {}", schema_message(source))
            }
            DecodeError::ArraySize { size, .. } if *size < 0 => {
                format!("Array size {size} cannot be negative")
            }
            DecodeError::ArraySize { size, available } => {
                format!("Error reading array of size {size}, only {available} bytes available")
            }
            // Java's `BufferUnderflowException` has no message: Kafka prints its class name.
            DecodeError::Truncated { .. } => "java.nio.BufferUnderflowException".to_owned(),
            other => other.to_string(),
        }
    }

    /// Kafka's `dumpProducerIdSnapshot` line (note the trailing space when there is no batch).
    pub(super) fn line(format: super::super::Format, entry: &ProducerSnapshotEntry) -> String {
        let current_txn_first_offset =
            (entry.current_txn_first_offset >= 0).then_some(entry.current_txn_first_offset);
        // Java's `OptionalLong` since 3.5 (the Java `ProducerStateEntry`), Scala's `Option`
        // before.
        let current_txn_first_offset = if format.since(3, 5) {
            super::super::log::optional_long(current_txn_first_offset)
        } else {
            current_txn_first_offset
                .map_or_else(|| "None".to_owned(), |offset| format!("Some({offset})"))
        };
        let mut line = format!(
            "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: \
             {current_txn_first_offset} ",
            entry.producer_id, entry.producer_epoch, entry.coordinator_epoch,
        );
        if format.since(3, 3) {
            let _ = write!(line, "lastTimestamp: {} ", entry.timestamp);
        }
        if entry.has_batch() {
            let first_sequence = entry.first_sequence();
            let _ = write!(
                line,
                "firstSequence: {first_sequence} lastSequence: {} lastOffset: {} offsetDelta: {} \
                 timestamp: {}",
                entry.last_sequence, entry.last_offset, entry.offset_delta, entry.timestamp
            );
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producer_snapshot_errors() {
        assert_eq!(
            producer_snapshot::read(&[0, 1, 0]).unwrap_err(),
            "Snapshot failed schema validation: Error reading field 'crc': \
             java.nio.BufferUnderflowException"
        );
        let mut truncated = vec![0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
        truncated.extend_from_slice(&[0; 45]);
        assert_eq!(
            producer_snapshot::read(&truncated).unwrap_err(),
            "Snapshot failed schema validation: Error reading field 'producer_entries': Error \
             reading field 'current_txn_first_offset': java.nio.BufferUnderflowException"
        );
        // The CRC covers the bytes after it, so an empty snapshot stays valid but for its version.
        let mut wrong_version = seglog_format::encode_producer_snapshot(&[]).unwrap();
        wrong_version[1] = 2;
        assert_eq!(
            producer_snapshot::read(&wrong_version).unwrap_err(),
            "Snapshot contained an unknown file version 2"
        );
        assert_eq!(
            producer_snapshot::read(&[0, 1, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]).unwrap_err(),
            "Snapshot failed schema validation: Error reading field 'producer_entries': Array \
             size -1 cannot be negative"
        );
    }
}
