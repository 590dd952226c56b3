//! Loading a partition directory at startup (Kafka's `LogLoader`): clean up leftovers of
//! interrupted deletes, cleanings and splits, open every segment, and recover the segments at or
//! after the recovery point when the last shutdown was not clean.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{FileKind, FileState, SegmentFileName};

use super::local_log::{LocalLog, LocalLogConfig};
use super::producer_state::CorruptSnapshot;
use super::segments::LogSegments;
use crate::error::{Error, Result};
use crate::io::Fs;
use crate::segment::{HeaderScan, LogSegment, segment_path};

/// What the loader found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Segments whose batches were validated and indexes rebuilt.
    pub segments_recovered: usize,
    /// The base offsets of those segments still in the log: their `.txnindex` was emptied, and
    /// `PartitionLog::open` refills it from the producers' replay.
    pub recovered_base_offsets: Vec<i64>,
    /// Bytes truncated from torn or corrupt tails.
    pub bytes_truncated: u64,
    /// Segments removed because they followed a truncated one, or lay below the log start.
    pub segments_deleted: usize,
    /// Leftover files removed (`.deleted`, `.cleaned`, incomplete `.swap`, orphan indexes).
    pub files_cleaned: usize,
    /// Aborted transactions put back into recovered segments' `.txnindex` files; filled in by
    /// `PartitionLog::open`.
    pub aborted_txns_restored: usize,
    /// `(leader epoch, start offset)` seen by recovery, for the epoch cache.
    pub leader_epochs: Vec<(i32, i64)>,
    /// Producer snapshots that did not decode and were deleted (Kafka logs each as a warning);
    /// filled in by `PartitionLog::open`.
    pub corrupt_snapshots: Vec<CorruptSnapshot>,
}

/// A loaded partition: its local log and the offsets the loader settled.
#[derive(Debug)]
pub struct LoadedLog {
    /// The segments, log end offset and recovery point.
    pub local: LocalLog,
    /// `max(log start offset checkpoint, first segment's base offset)`.
    pub log_start_offset: i64,
    /// What happened.
    pub report: LoadReport,
}

/// The checkpointed state a load starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadParams {
    /// The directory had a clean-shutdown marker: no segment needs scanning.
    pub had_clean_shutdown: bool,
    /// From `log-start-offset-checkpoint` (0 when absent).
    pub log_start_offset_checkpoint: i64,
    /// From `recovery-point-offset-checkpoint` (0 when absent).
    pub recovery_point_checkpoint: i64,
    /// The clock.
    pub now_ms: i64,
}

fn parse(path: &Path) -> Option<SegmentFileName> {
    SegmentFileName::parse(&path.file_name()?.to_string_lossy()).ok()
}

fn remove(fs: &dyn Fs, path: &Path) -> Result<()> {
    match fs.remove(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(Error::io("remove leftover file", path, error)),
    }
}

/// The offset after the last batch of a `.log` file, or `base` when it holds none.
fn next_offset_of(fs: &dyn Fs, path: &Path, base: i64) -> Result<i64> {
    let file = fs.open(path, crate::io::OpenMode::Read).map_err(|e| Error::io("open", path, e))?;
    let len = file.len().map_err(|e| Error::io("stat", path, e))?;
    let mut scan = HeaderScan::new(file.as_ref(), 0, u32::try_from(len).unwrap_or(u32::MAX));
    let mut next = base;
    while let Some(header) = scan.next_header(path)? {
        next = header.last_offset.checked_add(1).ok_or_else(|| Error::CorruptLog {
            path: path.to_owned(),
            position: u64::from(header.position),
            reason: format!("last offset {} leaves no next offset", header.last_offset),
        })?;
    }
    Ok(next)
}

/// Passes 1 to 3 of Kafka's loader: delete `.deleted` files; drop `.cleaned` files and any
/// `.swap` at or above the smallest `.cleaned` offset (an incomplete split); for the remaining
/// swaps, delete the old files they replace and rename them into place.
fn clean_leftovers(
    fs: &dyn Fs,
    dir: &Path,
    had_clean_shutdown: bool,
    report: &mut LoadReport,
) -> Result<()> {
    let files_cleaned_before = report.files_cleaned;
    let files = fs.list(dir).map_err(|e| Error::io("list partition", dir, e))?;
    let mut min_cleaned = i64::MAX;
    let mut swaps = Vec::new();
    for path in &files {
        let Some(name) = parse(path) else { continue };
        match name.state {
            FileState::Deleted => {
                remove(fs, path)?;
                report.files_cleaned += 1;
            }
            FileState::Cleaned => {
                min_cleaned = min_cleaned.min(name.offset);
                remove(fs, path)?;
                report.files_cleaned += 1;
            }
            FileState::Swap => swaps.push((name, path.clone())),
            FileState::Live => {}
        }
    }
    let mut kept_swaps = Vec::new();
    for (name, path) in swaps {
        if name.offset >= min_cleaned {
            remove(fs, &path)?;
            report.files_cleaned += 1;
        } else {
            kept_swaps.push((name, path));
        }
    }
    // The range the completed swaps cover: old live files inside it are replaced.
    let mut covered: Vec<(i64, i64)> = Vec::new();
    for (name, path) in &kept_swaps {
        if name.kind == FileKind::Log {
            covered.push((name.offset, next_offset_of(fs, path, name.offset)?));
        }
    }
    if let (Some(min), Some(max)) =
        (covered.iter().map(|r| r.0).min(), covered.iter().map(|r| r.1).max())
    {
        for path in fs.list(dir).map_err(|e| Error::io("list partition", dir, e))? {
            if let Some(name) = parse(&path)
                && name.state == FileState::Live
                && name.kind != FileKind::Snapshot
                && (min..max).contains(&name.offset)
            {
                remove(fs, &path)?;
                report.files_cleaned += 1;
            }
        }
    }
    let renamed_swaps = !kept_swaps.is_empty();
    for (_, path) in kept_swaps {
        let text = path.to_string_lossy();
        let live = PathBuf::from(text.strip_suffix(FileState::Swap.suffix()).unwrap_or(&text));
        fs.rename(&path, &live).map_err(|e| Error::io("rename swap", &path, e))?;
    }
    // What this load changed is made durable before anything builds on it. After an unclean
    // shutdown the entries found may themselves be unsynced (the process died, not the
    // machine), so they are synced even when nothing changed; a clean shutdown synced them.
    let changed = renamed_swaps || report.files_cleaned != files_cleaned_before;
    if changed || !had_clean_shutdown {
        fs.sync_dir(dir).map_err(|e| Error::io("fsync dir", dir, e))?;
    }
    Ok(())
}

/// Opens the segments at `bases` (each with its roll jitter), reporting those whose open
/// recovered a torn tail.
fn open_segments(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    bases: &BTreeSet<i64>,
    config: &LocalLogConfig,
    now_ms: i64,
    report: &mut LoadReport,
) -> Result<LogSegments> {
    let mut segments = LogSegments::new();
    for &base in bases {
        let segment_config = config.segment_config(dir, base);
        let (segment, recovered) =
            LogSegment::open(Arc::clone(fs), dir, base, segment_config, now_ms)?;
        if let Some(recovered) = recovered {
            report.segments_recovered += 1;
            report.recovered_base_offsets.push(base);
            report.bytes_truncated += recovered.truncated_bytes;
            report.leader_epochs.extend(recovered.leader_epochs);
        }
        segments.add(segment);
    }
    Ok(segments)
}

/// Loads the partition in `dir` (Kafka's `LogLoader.load`).
pub fn load(
    fs: Arc<dyn Fs>,
    dir: &Path,
    config: LocalLogConfig,
    params: LoadParams,
) -> Result<LoadedLog> {
    let mut report = LoadReport::default();
    clean_leftovers(fs.as_ref(), dir, params.had_clean_shutdown, &mut report)?;

    // Pass 4: orphan indexes go; every .log opens as a segment.
    let files = fs.list(dir).map_err(|e| Error::io("list partition", dir, e))?;
    let logs: BTreeSet<i64> = files
        .iter()
        .filter_map(|path| parse(path))
        .filter(|name| name.state == FileState::Live && name.kind == FileKind::Log)
        .map(|name| name.offset)
        .collect();
    for path in &files {
        if let Some(name) = parse(path)
            && name.state == FileState::Live
            && matches!(name.kind, FileKind::Index | FileKind::TimeIndex | FileKind::TxnIndex)
            && !logs.contains(&name.offset)
        {
            remove(fs.as_ref(), path)?;
            report.files_cleaned += 1;
        }
    }
    let mut segments = open_segments(&fs, dir, &logs, &config, params.now_ms, &mut report)?;

    // recoverLog: after an unclean shutdown, scan from the segment holding the recovery point.
    if !params.had_clean_shutdown {
        let from = segments
            .floor_segment(params.recovery_point_checkpoint)
            .map_or(i64::MIN, LogSegment::base_offset);
        let bases: Vec<i64> =
            segments.iter().map(LogSegment::base_offset).filter(|b| *b >= from).collect();
        for (base_idx, base) in bases.iter().enumerate() {
            let Some(segment) = segments.get_mut(*base) else { continue };
            let recovered = segment.recover()?;
            report.segments_recovered += 1;
            report.recovered_base_offsets.push(*base);
            report.bytes_truncated += recovered.truncated_bytes;
            report.leader_epochs.extend(recovered.leader_epochs);
            // A torn segment, or one that no longer ends where the next begins (its unsynced tail
            // was lost while a later segment's writes survived), ends the log: everything after
            // it is unflushed and may not follow it, so it goes.
            let next_base = bases.get(base_idx + 1).copied();
            let broken = recovered.truncated_bytes > 0
                || next_base.is_some_and(|next_base| next_base != recovered.next_offset);
            if broken {
                for later in bases.iter().skip(base_idx + 1) {
                    if let Some(segment) = segments.remove(*later) {
                        segment.delete()?;
                        report.segments_deleted += 1;
                    }
                }
                // The removals are durable before the log takes appends at those offsets again:
                // were they lost in a crash, the old segments would come back over the new
                // appends. (The leader-epoch checkpoint's atomic write at load used to fsync
                // the directory too, which hid this; txn_sim found it when that write stopped
                // syncing the directory.)
                fs.sync_dir(dir).map_err(|e| Error::io("fsync dir", dir, e))?;
                break;
            }
        }
    }

    let mut log_end_offset = match segments.active_segment() {
        Some(active) => active.read_next_offset()?,
        None => params.log_start_offset_checkpoint,
    };
    if log_end_offset < params.log_start_offset_checkpoint && !segments.is_empty() {
        // The files were probably removed by hand: start over at the checkpointed log start.
        for segment in segments.clear() {
            segment.delete()?;
            report.segments_deleted += 1;
        }
        log_end_offset = params.log_start_offset_checkpoint;
    }
    if segments.is_empty() {
        let start = params.log_start_offset_checkpoint.max(0);
        let path = segment_path(dir, start, FileKind::Log);
        if fs.exists(&path).map_err(|e| Error::io("stat", &path, e))? {
            remove(fs.as_ref(), &path)?;
        }
        let segment_config = config.segment_config(dir, start);
        segments.add(LogSegment::create(fs.clone(), dir, start, segment_config, params.now_ms)?);
        fs.sync_dir(dir).map_err(|e| Error::io("fsync dir", dir, e))?;
        log_end_offset = start;
    }
    // Inactive segments' indexes are sealed (their entries leave the heap), the active one's
    // grown back to take appends.
    for segment in segments.iter_mut() {
        segment.seal_indexes()?;
    }
    if let Some(active) = segments.active_segment_mut() {
        active.resize_indexes_to_max()?;
    }
    report.recovered_base_offsets.sort_unstable();
    report.recovered_base_offsets.dedup();
    report.recovered_base_offsets.retain(|base| segments.contains(*base));
    let recovery_point = if params.had_clean_shutdown {
        log_end_offset
    } else {
        params.recovery_point_checkpoint.min(log_end_offset)
    };
    let first_base = segments.first_segment().map_or(log_end_offset, LogSegment::base_offset);
    let log_start_offset = params.log_start_offset_checkpoint.max(first_base);
    let local =
        LocalLog::new(fs, dir, config, segments, recovery_point, log_end_offset, params.now_ms)?;
    Ok(LoadedLog { local, log_start_offset, report })
}
