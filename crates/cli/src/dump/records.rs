//! Records inside an entry: decoding them as Kafka's iterators would, and Kafka's record lines
//! (metadata, key and payload through the chosen decoders, control records).

use std::borrow::Cow;
use std::fmt::Write as _;

use seglog_format::schema::kraft;
use seglog_format::schema::message::{Message, to_json};
use seglog_format::{
    Batch, Batches, Compression, ControlRecordType, DecodeLimits, EndTransactionMarker,
    LegacyEntry, Record,
};

use super::log::kafka_compression;
use super::{Format, Options, Parser, Problem, Step, decoders};

/// A record with what Kafka's record line needs beyond [`Record`].
pub(super) struct DumpRecord<'a> {
    pub(super) record: Record<'a>,
    /// For legacy records: `isValid` and the stored CRC.
    pub(super) legacy_check: Option<(bool, u32)>,
    /// The batch's `baseOffset` (for a legacy wrapper, its first inner offset).
    pub(super) batch_base_offset: i64,
}

/// The records of one entry, decoded as Kafka's iterator would, or the reason it would throw.
pub(super) fn entry_records<'a>(
    entry: &Batch<'a>,
    limits: DecodeLimits,
    sink: &mut dyn FnMut(DumpRecord<'_>) -> Step,
) -> Step {
    match entry {
        Batch::V2(batch) => {
            let batch_base_offset = batch.base_offset();
            // Kafka's iterator yields nothing for a count of 0, whatever follows the header.
            if batch.records_count() == 0 {
                return Ok(());
            }
            let records = batch.records(limits).map_err(|error| Problem::new(error.to_string()))?;
            if kafka_compression(entry).ok() == Some(Compression::None) {
                for record in &records {
                    let record = record.map_err(|error| Problem::new(error.to_string()))?;
                    sink(DumpRecord { record, legacy_check: None, batch_base_offset })?;
                }
            } else {
                // Kafka decompresses a whole batch before yielding its first record.
                let all: Vec<Record<'_>> = records
                    .iter()
                    .collect::<Result<_, _>>()
                    .map_err(|error| Problem::new(error.to_string()))?;
                for record in all {
                    sink(DumpRecord { record, legacy_check: None, batch_base_offset })?;
                }
            }
            Ok(())
        }
        Batch::Legacy(legacy) => legacy_records(legacy, limits, sink),
    }
}

pub(super) fn legacy_records(
    legacy: &LegacyEntry<'_>,
    limits: DecodeLimits,
    sink: &mut dyn FnMut(DumpRecord<'_>) -> Step,
) -> Step {
    let codec = (legacy.attributes() & 0x07, Compression::from_id(legacy.attributes() & 0x07));
    if let (_, Ok(Compression::None)) = codec {
        // An uncompressed message is its own record, valid or not.
        let key = legacy.key().map_err(|error| Problem::new(error.to_string()))?;
        let value = legacy.value().map_err(|error| Problem::new(error.to_string()))?;
        let record = Record {
            offset: legacy.offset(),
            timestamp: legacy.timestamp(),
            timestamp_type: legacy.timestamp_type(),
            key,
            value,
            headers: seglog_format::Headers::default(),
            sequence: -1,
            size_bytes: legacy.as_bytes().len(),
        };
        let check = (legacy.crc() == legacy.compute_crc(), legacy.crc());
        return sink(DumpRecord {
            record,
            legacy_check: Some(check),
            batch_base_offset: legacy.offset(),
        });
    }
    let records = legacy.records(limits).map_err(|error| Problem::new(error.to_string()))?;
    let inner: Vec<(bool, u32)> = match &records {
        seglog_format::legacy::LegacyRecords::Wrapper { data, .. } => Batches::new(data)
            .filter_map(Result::ok)
            .map(|item| (item.batch.is_valid(), item.batch.crc()))
            .collect(),
        seglog_format::legacy::LegacyRecords::Single(_) => Vec::new(),
    };
    let all: Vec<Record<'_>> = records
        .iter()
        .collect::<Result<_, _>>()
        .map_err(|error| Problem::new(error.to_string()))?;
    let batch_base_offset = all.first().map_or(legacy.offset(), |record| record.offset);
    for (record, check) in all.into_iter().zip(inner) {
        sink(DumpRecord { record, legacy_check: Some(check), batch_base_offset })?;
    }
    Ok(())
}

/// A KRaft control record's value as Kafka's JSON.
pub(super) fn kraft_json(message: &Message, value: &[u8]) -> Result<String, String> {
    kraft::decode(message, value).map(|value| to_json(&value)).map_err(|error| error.to_string())
}

/// Renders the control-record part of a record line.
pub(super) fn control_info(format: Format, record: &Record<'_>) -> Result<String, String> {
    let key = record.key.ok_or("control record without a key")?;
    let kind = ControlRecordType::parse_key(key).map_err(|error| error.to_string())?;
    let value = record.value.unwrap_or_default();
    let json = |name: &str, message: &Message| {
        kraft_json(message, value).map(|json| format!(" {name} {json}"))
    };
    match kind {
        ControlRecordType::Abort | ControlRecordType::Commit => {
            let marker = EndTransactionMarker::parse(value).map_err(|error| error.to_string())?;
            Ok(format!(
                " endTxnMarker: {} coordinatorEpoch: {}",
                kind.name(),
                marker.coordinator_epoch
            ))
        }
        ControlRecordType::SnapshotHeader if format.since(3, 3) => {
            json("SnapshotHeader", &kraft::SNAPSHOT_HEADER)
        }
        ControlRecordType::SnapshotFooter if format.since(3, 3) => {
            json("SnapshotFooter", &kraft::SNAPSHOT_FOOTER)
        }
        ControlRecordType::KraftVersion if format.since(3, 8) => {
            json("KRaftVersion", &kraft::KRAFT_VERSION)
        }
        ControlRecordType::KraftVoters if format.since(3, 8) => json("KRaftVoters", &kraft::VOTERS),
        other => {
            Ok(format!(" controlType: {}({})", format.control_type_name(other.id()), other.id()))
        }
    }
}

/// Where a record line sits: its batch and the batch's position.
pub(super) struct LineContext<'e, 'a> {
    pub(super) options: &'e Options,
    pub(super) entry: &'e Batch<'a>,
    pub(super) position: u64,
}

/// A record's header keys as Kafka prints them: `[k1,k2]`.
pub(super) fn header_keys(record: &Record<'_>) -> String {
    let keys: Vec<Cow<'_, str>> = record.headers.iter().map(|header| header.key_str()).collect();
    format!("[{}]", keys.join(","))
}

/// The record line of Kafka 2.0 and 2.1, printed instead of the batch line.
pub(super) fn record_line_before_2_2(
    context: &LineContext<'_, '_>,
    dump: &DumpRecord<'_>,
    codec: &str,
    is_valid: bool,
    crc: &str,
) -> Result<String, String> {
    let (options, entry, format) = (context.options, context.entry, context.options.format);
    let record = &dump.record;
    let size = |bytes: Option<&[u8]>| bytes.map_or(-1, |bytes| bytes.len() as i64);
    let (key_size, value_size) = (size(record.key), size(record.value));
    let (offset, timestamp_type, timestamp) =
        (record.offset, entry.timestamp_type(), record.timestamp);
    let mut line = String::with_capacity(256);
    let _ = write!(
        line,
        "offset: {offset} position: {} {timestamp_type}: {timestamp} isvalid: {is_valid} \
         keysize: {key_size} valuesize: {value_size} magic: {} compresscodec: {codec}",
        context.position,
        entry.magic()
    );
    match entry {
        Batch::V2(batch) => {
            let _ = write!(
                line,
                " producerId: {} producerEpoch: {} sequence: {} isTransactional: {} headerKeys: {}",
                batch.producer_id(),
                batch.producer_epoch(),
                record.sequence,
                batch.is_transactional(),
                header_keys(record)
            );
        }
        Batch::Legacy(_) => {
            let _ = write!(line, " crc: {crc}");
        }
    }
    if entry.is_control_batch() {
        line.push_str(&control_info(format, record)?);
    } else if options.print_data_log {
        let (key, payload) = parse_record(options.parser, record)?;
        for (name, text) in [("key", key), ("payload", payload)] {
            if let Some(text) = text {
                let _ = write!(line, " {name}: {text}");
            }
        }
    }
    Ok(line)
}

/// The Kafka record line for one record (without its newline).
pub(super) fn record_line(
    context: &LineContext<'_, '_>,
    dump: &DumpRecord<'_>,
) -> Result<String, String> {
    let (options, entry, format) = (context.options, context.entry, context.options.format);
    let record = &dump.record;
    let mut line = String::with_capacity(128);
    let mut prefix = "| ";
    let size = |bytes: Option<&[u8]>| bytes.map_or(-1, |bytes| bytes.len() as i64);
    let (key_size, value_size) = (size(record.key), size(record.value));
    let (offset, timestamp_type, timestamp) =
        (record.offset, entry.timestamp_type(), record.timestamp);
    let codec = format.codec(kafka_compression(entry)?);
    // Legacy records carry their own CRC; v2 records are always "valid" and have none.
    let (is_valid, crc) = match dump.legacy_check {
        Some((is_valid, crc)) => (is_valid, crc.to_string()),
        None => (true, "null".to_owned()),
    };
    if format.record_lines_replace_batch_lines() {
        return record_line_before_2_2(context, dump, &codec, is_valid, &crc);
    }
    if !options.skip_record_metadata {
        if format.since(3, 0) || !format.since(2, 8) {
            let _ = write!(line, "{prefix}offset: {offset} {timestamp_type}: {timestamp} ");
            let _ = if format.since(3, 0) {
                write!(line, "keySize: {key_size} valueSize: {value_size}")
            } else {
                write!(line, "keysize: {key_size} valuesize: {value_size}")
            };
        } else {
            let (base_sequence, last_sequence, producer_epoch, partition_leader_epoch, last_offset) =
                match entry {
                    Batch::V2(batch) => (
                        batch.base_sequence(),
                        batch.last_sequence(),
                        batch.producer_epoch(),
                        batch.partition_leader_epoch(),
                        batch.last_offset(),
                    ),
                    Batch::Legacy(legacy) => (-1, -1, -1, -1, legacy.offset()),
                };
            let _ = write!(
                line,
                "{prefix}offset: {offset} isValid: {is_valid} crc: {crc} keySize: {key_size} \
                 valueSize: {value_size} {timestamp_type}: {timestamp} baseOffset: {} lastOffset: \
                 {last_offset} baseSequence: {base_sequence} lastSequence: {last_sequence} \
                 producerEpoch: {producer_epoch} partitionLeaderEpoch: {partition_leader_epoch} \
                 batchSize: {} magic: {} compressType: {codec} position: {}",
                dump.batch_base_offset,
                entry.size_bytes(),
                entry.magic(),
                context.position
            );
        }
        prefix = " ";
        if entry.magic() >= 2 {
            let _ =
                write!(line, " sequence: {} headerKeys: {}", record.sequence, header_keys(record));
        }
        if dump.legacy_check.is_some() {
            if format.since(3, 0) {
                // The stray `}` is Kafka's.
                let _ = write!(line, " isValid: {is_valid} crc: {crc}}}");
            } else {
                let _ = write!(line, " crc: {crc} isvalid: {is_valid}");
            }
        }
        if entry.is_control_batch() {
            line.push_str(&control_info(format, record)?);
        }
    }
    if options.print_data_log && !entry.is_control_batch() {
        let (key, payload) = parse_record(options.parser, record)?;
        if !format.since(2, 8) {
            prefix = " ";
        }
        if let Some(key) = key {
            let _ = write!(line, "{prefix}key: {key}");
        }
        if let Some(payload) = payload {
            let _ = write!(line, " payload: {payload}");
        }
    }
    Ok(line)
}

/// Kafka's `MessageParser.parse`: the key and payload texts.
pub(super) fn parse_record(
    parser: Parser,
    record: &Record<'_>,
) -> Result<(Option<String>, Option<String>), String> {
    match parser {
        Parser::Decoders { key, value } => {
            let key = record.key.map(|bytes| key.decode(bytes)).transpose()?;
            let value = record.value.map(|bytes| value.decode(bytes)).transpose()?;
            Ok((key, value))
        }
        Parser::Offsets => decoders::offsets_key_value(record),
        Parser::TransactionLog => decoders::transaction_key_value(record),
        // No keys for metadata records.
        Parser::ClusterMetadata => Ok((
            None,
            Some(seglog_format::schema::metadata::dump_payload(record.value, record.offset)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::KafkaVersion;
    use super::super::tests::record;
    use super::*;

    #[test]
    fn kraft_control_records() {
        let mut header = vec![0, 0];
        header.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        header.push(0);
        assert_eq!(
            kraft_json(&kraft::SNAPSHOT_HEADER, &header).unwrap(),
            "{\"version\":0,\"lastContainedLogTimestamp\":1700000000000}"
        );
        assert_eq!(kraft_json(&kraft::SNAPSHOT_FOOTER, &[0, 0, 0]).unwrap(), "{\"version\":0}");
        assert_eq!(
            kraft_json(&kraft::KRAFT_VERSION, &[0, 0, 0, 1, 0]).unwrap(),
            "{\"version\":0,\"kRaftVersion\":1}"
        );
        // One voter: id 1, directory id 0..1, one endpoint CONTROLLER localhost:9093, versions
        // 0..1; an unknown tagged field at the end is skipped.
        let mut voters = vec![0, 0, 2];
        voters.extend_from_slice(&1i32.to_be_bytes());
        voters.extend_from_slice(&[0; 15]);
        voters.push(1);
        voters.push(2);
        voters.push(11);
        voters.extend_from_slice(b"CONTROLLER");
        voters.push(10);
        voters.extend_from_slice(b"localhost");
        voters.extend_from_slice(&9093u16.to_be_bytes());
        voters.push(0);
        voters.extend_from_slice(&[0, 0, 0, 1, 0]);
        voters.push(0);
        voters.extend_from_slice(&[1, 7, 2, 0xAA, 0xBB]);
        assert_eq!(
            kraft_json(&kraft::VOTERS, &voters).unwrap(),
            "{\"version\":0,\"voters\":[{\"voterId\":1,\"voterDirectoryId\":\"AAAAAAAAAAAAAAAAAAAAAQ\",\
             \"endpoints\":[{\"name\":\"CONTROLLER\",\"host\":\"localhost\",\"port\":9093}],\
             \"kRaftVersionFeature\":{\"minSupportedVersion\":0,\"maxSupportedVersion\":1}}]}"
        );
        assert_eq!(kraft_json(&kraft::SNAPSHOT_FOOTER, &[0]).unwrap_err(), "null");
    }

    #[test]
    fn control_record_texts() {
        let commit = ControlRecordType::Commit.encode_key();
        let marker = EndTransactionMarker { coordinator_epoch: 3 }.encode();
        assert_eq!(
            control_info(
                Format { version: KafkaVersion::CURRENT },
                &record(Some(&commit), Some(&marker))
            )
            .unwrap(),
            " endTxnMarker: COMMIT coordinatorEpoch: 3"
        );
        let leader_change = ControlRecordType::LeaderChange.encode_key();
        assert_eq!(
            control_info(
                Format { version: KafkaVersion::CURRENT },
                &record(Some(&leader_change), Some(&[]))
            )
            .unwrap(),
            " controlType: LEADER_CHANGE(2)"
        );
        assert_eq!(
            control_info(
                Format { version: KafkaVersion::CURRENT },
                &record(Some(&[0, 0, 0, 42]), None)
            )
            .unwrap(),
            " controlType: UNKNOWN(42)"
        );
        assert!(
            control_info(Format { version: KafkaVersion::CURRENT }, &record(None, None)).is_err()
        );
        assert!(
            control_info(
                Format { version: KafkaVersion::CURRENT },
                &record(Some(&commit), Some(&[0]))
            )
            .is_err()
        );
    }
}
