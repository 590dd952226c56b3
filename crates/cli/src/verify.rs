//! `seglog verify`: check every partition of a log directory without changing it (batch CRCs,
//! offset order, index and time index entries, leftovers, checkpoints); `--repair` then does
//! what recovery does and says what it changed.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use seglog_format::checkpoint::parse_offset_checkpoint;
use seglog_format::names::{DirState, PartitionDir};
use seglog_format::{
    Batches, DecodeLimits, FileKind, FileState, OffsetIndexEntry, SegmentFileName, TimeIndexEntry,
};
use seglog_storage::manager::CLEAN_SHUTDOWN_FILE;

use crate::common::{LogDirArgs, open_manager, show};

/// Arguments of `seglog verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    log_dir: LogDirArgs,
    /// Repair what recovery can: truncate torn tails, rebuild indexes, remove leftovers. The
    /// directory must not be in use.
    #[arg(long)]
    repair: bool,
    /// Check the tiered storage bucket instead (`--bucket`): each partition's manifest against
    /// its objects (sizes and CRCs), and the orphans.
    #[arg(long, conflicts_with = "repair")]
    remote: bool,
    #[command(flatten)]
    bucket: crate::remote::RemoteArgs,
}

/// One partition's findings.
#[derive(Debug, Default)]
struct Findings {
    n_segments: usize,
    n_batches: usize,
    n_records: usize,
    log_end_offset: Option<i64>,
    /// Damage: the exit code is 1.
    problems: Vec<String>,
    /// What recovery fixes on the next open, and Kafka itself leaves behind (indexes are created
    /// lazily; leftovers are removed at load): reported, exit code 0.
    warnings: Vec<String>,
}

fn name_of(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Checks one segment's `.log` and indexes; returns the offset after its last batch.
fn verify_segment(
    dir: &Path,
    base_offset: i64,
    previous_end: Option<i64>,
    findings: &mut Findings,
) -> Result<Option<i64>> {
    let log_path = dir.join(SegmentFileName::new(base_offset, FileKind::Log).to_name());
    let bytes =
        std::fs::read(&log_path).with_context(|| format!("cannot read {}", log_path.display()))?;
    let shown = log_path.display().to_string();
    let mut starts = Starts::new();
    let mut expected_next = previous_end;
    let mut walk = Batches::new(&bytes);
    for item in walk.by_ref() {
        let item = match item {
            Ok(item) => item,
            Err(error) => {
                findings.problems.push(format!("{shown}: {error}"));
                return Ok(expected_next);
            }
        };
        let batch = item.batch;
        if let Err(error) = batch.validate() {
            findings
                .problems
                .push(format!("{shown}: batch at position {}: {error}", item.position));
            return Ok(expected_next);
        }
        let records = match batch.records(DecodeLimits::default()) {
            Ok(records) => records,
            Err(error) => {
                findings
                    .problems
                    .push(format!("{shown}: batch at position {}: {error}", item.position));
                return Ok(expected_next);
            }
        };
        let mut n_records = 0;
        for record in &records {
            if let Err(error) = record {
                findings
                    .problems
                    .push(format!("{shown}: batch at position {}: {error}", item.position));
                return Ok(expected_next);
            }
            n_records += 1;
        }
        let base = batch.base_offset(DecodeLimits::default()).unwrap_or(batch.last_offset());
        if let Some(expected) = expected_next
            && base < expected
        {
            findings.problems.push(format!("{shown}: batch at position {} starts at offset {base}, below the previous end {expected}", item.position));
        }
        if base < base_offset {
            findings.problems.push(format!("{shown}: batch at position {} starts at offset {base}, below the segment base {base_offset}", item.position));
        }
        starts.insert(item.position as u32, (base, batch.last_offset(), batch.max_timestamp()));
        expected_next = Some(batch.next_offset());
        findings.n_batches += 1;
        findings.n_records += n_records;
    }
    if walk.remaining_bytes() > 0 {
        findings.problems.push(format!(
            "{shown}: {} bytes of a torn batch at position {}",
            walk.remaining_bytes(),
            walk.next_position()
        ));
    }
    check_offset_index(dir, base_offset, &starts, findings)?;
    check_time_index(dir, base_offset, &starts, findings);
    Ok(expected_next)
}

/// Batch starts of a segment: position -> (base offset, last offset, max timestamp).
type Starts = BTreeMap<u32, (i64, i64, i64)>;

/// Each offset index entry names a batch start and an offset inside that batch (its last offset
/// since Kafka 2.0, its first before); entries increase. A zero tail is preallocation.
fn check_offset_index(
    dir: &Path,
    base_offset: i64,
    starts: &Starts,
    findings: &mut Findings,
) -> Result<()> {
    let index_path = dir.join(SegmentFileName::new(base_offset, FileKind::Index).to_name());
    match std::fs::read(&index_path) {
        Ok(index) => {
            let mut last = None;
            for (entry_idx, chunk) in index.chunks_exact(8).enumerate() {
                let entry = OffsetIndexEntry::decode(chunk.try_into().unwrap_or(&[0; 8]));
                let Ok(entry) = entry else {
                    findings
                        .problems
                        .push(format!("{}: entry {entry_idx} is corrupt", index_path.display()));
                    break;
                };
                if entry_idx > 0 && entry.relative_offset == 0 && entry.position == 0 {
                    break;
                }
                let offset = base_offset + i64::from(entry.relative_offset);
                let covered = starts
                    .get(&entry.position)
                    .is_some_and(|(b, l, _)| (*b..=*l).contains(&offset));
                if !covered || last.is_some_and(|last| offset <= last) {
                    findings.problems.push(format!("{}: entry {entry_idx} (offset {offset}, position {}) does not match the log", index_path.display(), entry.position));
                    break;
                }
                last = Some(offset);
            }
            if index.len() % 8 != 0 {
                findings.problems.push(format!(
                    "{}: length {} is not a multiple of 8",
                    index_path.display(),
                    index.len()
                ));
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            findings
                .warnings
                .push(format!("{}: missing (recovery rebuilds it)", index_path.display()));
        }
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read {}", index_path.display()));
        }
    }
    Ok(())
}

/// Time index entries increase, and each timestamp is at most the largest seen up to its offset.
fn check_time_index(dir: &Path, base_offset: i64, starts: &Starts, findings: &mut Findings) {
    let time_path = dir.join(SegmentFileName::new(base_offset, FileKind::TimeIndex).to_name());
    if let Ok(time) = std::fs::read(&time_path) {
        let mut last: Option<TimeIndexEntry> = None;
        for (entry_idx, chunk) in time.chunks_exact(12).enumerate() {
            let Ok(entry) = TimeIndexEntry::decode(chunk.try_into().unwrap_or(&[0; 12])) else {
                break;
            };
            if entry_idx > 0 && entry.timestamp == 0 && entry.relative_offset == 0 {
                break;
            }
            let offset = base_offset + i64::from(entry.relative_offset);
            let running_max =
                starts.values().filter(|(b, _, _)| *b <= offset).map(|(_, _, ts)| *ts).max();
            let ordered = last.is_none_or(|last| {
                entry.timestamp > last.timestamp && entry.relative_offset >= last.relative_offset
            });
            if !ordered || running_max.is_some_and(|max| entry.timestamp > max) {
                findings.problems.push(format!(
                    "{}: entry {entry_idx} (timestamp {}, offset {offset}) does not match the log",
                    time_path.display(),
                    entry.timestamp
                ));
                break;
            }
            last = Some(entry);
        }
    }
}

fn verify_partition(dir: &Path) -> Result<Findings> {
    let mut findings = Findings::default();
    let mut bases = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in &entries {
        let Ok(name) = SegmentFileName::parse(&name_of(path)) else { continue };
        match name.state {
            FileState::Live if name.kind == FileKind::Log => bases.push(name.offset),
            FileState::Live => {}
            state => findings.warnings.push(format!(
                "{}: leftover {} file (recovery removes it)",
                path.display(),
                state.suffix()
            )),
        }
    }
    findings.n_segments = bases.len();
    let mut end = None;
    let last_base = bases.last().copied();
    for base in bases {
        end = verify_segment(dir, base, end, &mut findings)?;
    }
    // Kafka's log end offset after recovery is the active segment's next offset: its base offset
    // when it holds no batches (a log whose data was all deleted keeps its position).
    findings.log_end_offset = match (end, last_base) {
        (Some(end), Some(base)) => Some(end.max(base)),
        (end, base) => end.or(base),
    };
    Ok(findings)
}

pub(crate) fn run(args: &VerifyArgs) -> Result<bool> {
    let mut out = std::io::stdout().lock();
    if args.remote {
        return crate::remote::verify(&args.bucket, &mut out);
    }
    let mut warned = false;
    let clean = check_all(&args.log_dir.log_dir, &mut out, &mut warned)?;
    if args.repair && (!clean || warned) {
        repair(&args.log_dir.log_dir, &mut out)?;
        writeln!(out, "after repair:")?;
        return check_all(&args.log_dir.log_dir, &mut out, &mut warned);
    }
    Ok(clean)
}

/// Verifies every directory, printing a report; returns whether all were free of problems, and
/// sets `warned` when there were warnings.
fn check_all(dirs: &[PathBuf], out: &mut impl Write, warned: &mut bool) -> Result<bool> {
    let mut clean = true;
    for log_dir in dirs {
        anyhow::ensure!(log_dir.is_dir(), "log directory {} does not exist", log_dir.display());
        let mut partitions: Vec<(PartitionDir, PathBuf)> = std::fs::read_dir(log_dir)
            .with_context(|| format!("cannot list {}", log_dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .filter_map(|p| PartitionDir::parse(&name_of(&p)).ok().map(|d| (d, p)))
            .filter(|(d, _)| d.state == DirState::Live)
            .collect();
        partitions.sort_by(|a, b| {
            (a.0.topic.as_str(), a.0.partition).cmp(&(b.0.topic.as_str(), b.0.partition))
        });
        let progress = crate::progress::bar(partitions.len() as u64, "verifying partitions");
        let mut ends = BTreeMap::new();
        for (partition_dir, path) in &partitions {
            let findings = verify_partition(path)?;
            progress.inc(1);
            let status = match (findings.problems.len(), findings.warnings.len()) {
                (0, 0) => "ok".to_owned(),
                (0, n_warnings) => format!("ok, {n_warnings} warnings"),
                (n_problems, _) => format!("{n_problems} problems"),
            };
            writeln!(
                out,
                "{}-{}: {} segments, {} batches, {} records, log end {}: {status}",
                partition_dir.topic,
                partition_dir.partition,
                findings.n_segments,
                findings.n_batches,
                findings.n_records,
                findings.log_end_offset.map_or_else(|| "-".to_owned(), |e| e.to_string())
            )?;
            for problem in &findings.problems {
                writeln!(out, "  {problem}")?;
            }
            for warning in &findings.warnings {
                writeln!(out, "  warning: {warning}")?;
            }
            clean &= findings.problems.is_empty();
            *warned |= !findings.warnings.is_empty();
            ends.insert(
                (partition_dir.topic.clone(), partition_dir.partition),
                findings.log_end_offset.unwrap_or(0),
            );
        }
        progress.finish_and_clear();
        clean &= check_checkpoints(log_dir, &ends, out, warned)?;
        writeln!(
            out,
            "{}: {} partitions, {}",
            log_dir.display(),
            partitions.len(),
            if clean { "clean" } else { "PROBLEMS FOUND" }
        )?;
    }
    Ok(clean)
}

/// Checkpoints never point past the data: `ends` holds each partition's log end. Returns
/// whether none does (a cleaner checkpoint past the end is only a warning).
fn check_checkpoints(
    log_dir: &Path,
    ends: &BTreeMap<(String, i32), i64>,
    out: &mut impl Write,
    warned: &mut bool,
) -> Result<bool> {
    let mut clean = true;
    for name in [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ] {
        // A cleaner checkpoint past the log end is a warning: the cleaner starts that
        // partition over from its log start, as Kafka's does.
        let is_cleaner = name == "cleaner-offset-checkpoint";
        let path = log_dir.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        match parse_offset_checkpoint(&text) {
            Ok(entries) => {
                for entry in entries {
                    if let Some(end) = ends.get(&(entry.topic.clone(), entry.partition))
                        && entry.offset > *end
                    {
                        if is_cleaner {
                            writeln!(
                                out,
                                "  warning: {}: {}-{} at offset {} is past the log end {end} \
                                 (the cleaner starts over from the log start)",
                                path.display(),
                                entry.topic,
                                entry.partition,
                                entry.offset
                            )?;
                            *warned = true;
                            continue;
                        }
                        writeln!(
                            out,
                            "{}: {}-{} at offset {} is past the log end {end}",
                            path.display(),
                            entry.topic,
                            entry.partition,
                            entry.offset
                        )?;
                        clean = false;
                    }
                }
            }
            Err(error) => {
                writeln!(out, "{}: {error}", path.display())?;
                clean = false;
            }
        }
    }
    Ok(clean)
}

/// Recovery on demand: without the clean-shutdown marker and with recovery points at zero,
/// opening the directory validates every batch, truncates torn tails, rebuilds indexes and
/// removes leftovers; a clean shutdown then records the result.
fn repair(dirs: &[PathBuf], out: &mut impl Write) -> Result<()> {
    for dir in dirs {
        let marker = dir.join(CLEAN_SHUTDOWN_FILE);
        if marker.exists() {
            std::fs::remove_file(&marker)
                .with_context(|| format!("cannot remove {}", marker.display()))?;
        }
        let checkpoint = dir.join("recovery-point-offset-checkpoint");
        if checkpoint.exists() {
            std::fs::remove_file(&checkpoint)
                .with_context(|| format!("cannot remove {}", checkpoint.display()))?;
        }
    }
    let (manager, report) = open_manager(dirs)
        .with_context(|| format!("cannot repair {} (is a broker using it?)", show(dirs)))?;
    for (tp, load) in &report.partitions {
        if load.bytes_truncated > 0 || load.segments_deleted > 0 || load.files_cleaned > 0 {
            writeln!(
                out,
                "repaired {tp}: {} bytes truncated, {} segments deleted, {} leftover files removed, indexes rebuilt for {} segments",
                load.bytes_truncated,
                load.segments_deleted,
                load.files_cleaned,
                load.segments_recovered
            )?;
        }
    }
    manager.shutdown()?;
    writeln!(out, "repair done: {} partitions recovered", report.partitions.len())?;
    Ok(())
}
