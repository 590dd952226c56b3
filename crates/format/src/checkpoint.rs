//! Checkpoint text files (spec §3.4, §3.5): a version line, a count line, then entries. Used by
//! `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
//! `replication-offset-checkpoint`, `cleaner-offset-checkpoint` and `leader-epoch-checkpoint`.

use crate::error::{DecodeError, Result};

/// The version every offset checkpoint and the leader-epoch checkpoint use.
pub const CHECKPOINT_VERSION: i32 = 0;

/// The largest entry count a checkpoint may declare (bounds the allocation).
pub const CHECKPOINT_ENTRIES_MAX: usize = 10_000_000;

/// Parses the generic format (Kafka's `CheckpointFile.CheckpointReadBuffer`): an empty file or a
/// missing count line is zero entries; otherwise the version must match and the count be exact.
pub fn parse_checkpoint<T>(
    text: &str,
    expected_version: i32,
    mut parse_entry: impl FnMut(&str) -> Option<T>,
) -> Result<Vec<T>> {
    let error = |line: usize, reason: String| DecodeError::Checkpoint { line, reason };
    let mut lines = text.lines();
    let Some(version) = lines.next() else {
        return Ok(Vec::new());
    };
    let version: i32 = version
        .trim()
        .parse()
        .map_err(|_| error(1, format!("malformed version line {version:?}")))?;
    if version != expected_version {
        return Err(error(1, format!("unrecognised version {version}")));
    }
    let Some(count) = lines.next() else {
        return Ok(Vec::new());
    };
    let count: usize =
        count.trim().parse().map_err(|_| error(2, format!("malformed entry count {count:?}")))?;
    if count > CHECKPOINT_ENTRIES_MAX {
        return Err(error(2, format!("entry count {count} exceeds {CHECKPOINT_ENTRIES_MAX}")));
    }
    let mut entries = Vec::with_capacity(count.min(4096));
    for (line_idx, line) in lines.enumerate() {
        let line_no = line_idx + 3;
        if entries.len() == count {
            return Err(error(line_no, format!("expected {count} entries but found more")));
        }
        let entry = parse_entry(line).ok_or_else(|| {
            error(line_no, format!("malformed line in checkpoint file: {line:?}"))
        })?;
        entries.push(entry);
    }
    if entries.len() != count {
        return Err(error(
            entries.len() + 3,
            format!("expected [{count}] entries but found only [{}]", entries.len()),
        ));
    }
    Ok(entries)
}

/// Writes the generic format with `\n` line ends.
pub fn write_checkpoint<T>(
    version: i32,
    entries: &[T],
    mut write_entry: impl FnMut(&T) -> String,
) -> String {
    let mut text = format!("{version}\n{}\n", entries.len());
    for entry in entries {
        text.push_str(&write_entry(entry));
        text.push('\n');
    }
    text
}

/// A `<topic> <partition> <offset>` entry of the log-directory checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OffsetCheckpointEntry {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset (recovery point, log start offset, high watermark, or first dirty offset).
    pub offset: i64,
}

/// Parses an offset checkpoint file.
pub fn parse_offset_checkpoint(text: &str) -> Result<Vec<OffsetCheckpointEntry>> {
    parse_checkpoint(text, CHECKPOINT_VERSION, |line| {
        let mut tokens = line.split_whitespace();
        let topic = tokens.next()?;
        let partition = tokens.next()?.parse().ok()?;
        let offset = tokens.next()?.parse().ok()?;
        tokens.next().is_none().then(|| OffsetCheckpointEntry {
            topic: topic.to_owned(),
            partition,
            offset,
        })
    })
}

/// Writes an offset checkpoint file.
pub fn write_offset_checkpoint(entries: &[OffsetCheckpointEntry]) -> String {
    write_checkpoint(CHECKPOINT_VERSION, entries, |entry| {
        format!("{} {} {}", entry.topic, entry.partition, entry.offset)
    })
}

/// A `<epoch> <startOffset>` entry of `leader-epoch-checkpoint` (Kafka's `EpochEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: i32,
    /// The first offset written in that epoch.
    pub start_offset: i64,
}

/// Parses `leader-epoch-checkpoint`.
pub fn parse_leader_epoch_checkpoint(text: &str) -> Result<Vec<EpochEntry>> {
    parse_checkpoint(text, CHECKPOINT_VERSION, |line| {
        let mut tokens = line.split_whitespace();
        let epoch = tokens.next()?.parse().ok()?;
        let start_offset = tokens.next()?.parse().ok()?;
        tokens.next().is_none().then_some(EpochEntry { epoch, start_offset })
    })
}

/// Writes `leader-epoch-checkpoint`.
pub fn write_leader_epoch_checkpoint(entries: &[EpochEntry]) -> String {
    write_checkpoint(CHECKPOINT_VERSION, entries, |entry| {
        format!("{} {}", entry.epoch, entry.start_offset)
    })
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    #[test]
    fn spec_examples_round_trip() {
        let text = "0\n2\norders 0 1834\norders 1 1790\n";
        let entries = parse_offset_checkpoint(text).unwrap();
        assert_eq!(
            entries,
            vec![
                OffsetCheckpointEntry { topic: "orders".into(), partition: 0, offset: 1834 },
                OffsetCheckpointEntry { topic: "orders".into(), partition: 1, offset: 1790 },
            ]
        );
        assert_eq!(write_offset_checkpoint(&entries), text);
        let text = "0\n2\n0 0\n3 1520\n";
        let epochs = parse_leader_epoch_checkpoint(text).unwrap();
        assert_eq!(epochs[1], EpochEntry { epoch: 3, start_offset: 1520 });
        assert_eq!(write_leader_epoch_checkpoint(&epochs), text);
    }

    #[test]
    fn empty_and_countless_files_have_no_entries() {
        assert!(parse_offset_checkpoint("").unwrap().is_empty());
        assert!(parse_offset_checkpoint("0\n").unwrap().is_empty());
        assert!(parse_offset_checkpoint("0\n0\n").unwrap().is_empty());
    }

    #[test]
    fn malformed_files_are_errors_with_line_numbers() {
        let cases = [
            ("1\n0\n", 1),
            ("x\n0\n", 1),
            ("0\nx\n", 2),
            ("0\n2\na 0 1\n", 4),
            ("0\n1\na 0 1\nb 0 2\n", 4),
            ("0\n1\na 0\n", 3),
            ("0\n1\na 0 1 2\n", 3),
            ("0\n1\na x 1\n", 3),
            ("0\n99999999999\n", 2),
        ];
        for (text, line) in cases {
            match parse_offset_checkpoint(text) {
                Err(DecodeError::Checkpoint { line: found, .. }) => {
                    assert_eq!(found, line, "{text:?}");
                }
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    /// The parse of `text` as an offset checkpoint, one line per entry or the error's message.
    fn check(text: &str, expect: &Expect) {
        let dump = match parse_offset_checkpoint(text) {
            Ok(entries) => entries
                .iter()
                .map(|entry| format!("{} {} {}", entry.topic, entry.partition, entry.offset))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(error) => format!("error: {error}"),
        };
        expect.assert_eq(&(dump + "\n"));
    }

    #[test]
    #[expect(clippy::needless_raw_string_hashes, reason = "expect-test writes snapshots so")]
    fn checkpoint_dumps() {
        check(
            "0\n2\norders 0 1834\norders 1 1790\n",
            &expect![[r#"
            orders 0 1834
            orders 1 1790
        "#]],
        );
        check(
            "0\n1\nmy-topic 12 -1\n",
            &expect![[r#"
            my-topic 12 -1
        "#]],
        );
        check(
            "1\n0\n",
            &expect![[r#"
            error: malformed checkpoint file at line 1: unrecognised version 1
        "#]],
        );
        check(
            "0\n2\na 0 1\n",
            &expect![[r#"
            error: malformed checkpoint file at line 4: expected [2] entries but found only [1]
        "#]],
        );
        check(
            "0\n1\na x 1\n",
            &expect![[r#"
            error: malformed checkpoint file at line 3: malformed line in checkpoint file: "a x 1"
        "#]],
        );
    }
}
