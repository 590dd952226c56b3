//! `seglog inspect`: walk segments with `seglog-format` and report batches, records, offsets,
//! codecs and any corruption, one line per partition and per segment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use seglog_format::{
    Batches, Compression, DecodeLimits, FileKind, FileState, HeaderRef, PartitionDir,
    RecordBatchBuilder, SegmentFileName,
};

/// The directory used when no path is given.
pub(crate) const DEFAULT_LOG_DIR: &str = "seglog-data";

/// What one segment file holds.
#[derive(Debug, Default)]
struct SegmentReport {
    n_batches: usize,
    n_records: usize,
    first_offset: Option<i64>,
    last_offset: Option<i64>,
    size_bytes: u64,
    codecs: BTreeMap<&'static str, usize>,
    problem: Option<String>,
}

impl SegmentReport {
    fn offsets(&self) -> String {
        match (self.first_offset, self.last_offset) {
            (Some(first), Some(last)) => format!("offsets {first}..{last}"),
            _ => "empty".to_owned(),
        }
    }

    fn codecs(&self) -> String {
        self.codecs.iter().map(|(codec, n)| format!("{codec}={n}")).collect::<Vec<_>>().join(" ")
    }
}

/// Walks one `.log` file, validating every batch and every record.
fn inspect_segment(path: &Path, limits: DecodeLimits) -> Result<SegmentReport> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut report = SegmentReport { size_bytes: bytes.len() as u64, ..SegmentReport::default() };
    let mut batches = Batches::new(&bytes);
    for item in batches.by_ref() {
        let checked = item.and_then(|item| {
            let batch = item.batch;
            batch.validate().map_err(|error| error.at(item.position))?;
            let records = batch.records(limits).map_err(|error| error.at(item.position))?;
            let mut n_records = 0;
            for record in &records {
                record.map_err(|error| error.at(item.position))?;
                n_records += 1;
            }
            Ok((batch, n_records))
        });
        match checked {
            Ok((batch, n_records)) => {
                report.n_batches += 1;
                report.n_records += n_records;
                if report.first_offset.is_none() {
                    report.first_offset = batch.base_offset(limits).ok();
                }
                report.last_offset = Some(batch.last_offset());
                let codec = batch.compression().map_or("invalid", Compression::name);
                *report.codecs.entry(codec).or_default() += 1;
            }
            Err(error) => {
                report.problem = Some(format!("corrupt: {error}"));
                return Ok(report);
            }
        }
    }
    if batches.remaining_bytes() > 0 {
        report.problem = Some(format!(
            "{} bytes of partial batch at position {}",
            batches.remaining_bytes(),
            batches.next_position()
        ));
    }
    Ok(report)
}

/// The live `.log` files of a partition directory, in offset order.
fn segments_of(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut segments = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned());
        if let Some(parsed) = name.as_deref().and_then(|name| SegmentFileName::parse(name).ok())
            && parsed.kind == FileKind::Log
            && parsed.state == FileState::Live
        {
            segments.push((parsed.offset, path));
        }
    }
    segments.sort();
    Ok(segments.into_iter().map(|(_, path)| path).collect())
}

/// Prints a partition's summary and its segments; returns whether all were clean.
fn inspect_partition(dir: &Path, limits: DecodeLimits) -> Result<bool> {
    let name = dir.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let mut clean = true;
    let mut lines = Vec::new();
    let mut total = SegmentReport::default();
    let segments = segments_of(dir)?;
    for path in &segments {
        let report = inspect_segment(path, limits)?;
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let status = report.problem.clone().unwrap_or_else(|| "ok".to_owned());
        clean &= report.problem.is_none();
        lines.push(format!(
            "  {file}: {} batches, {} records, {}, {} bytes, {status}",
            report.n_batches,
            report.n_records,
            report.offsets(),
            report.size_bytes
        ));
        total.n_batches += report.n_batches;
        total.n_records += report.n_records;
        total.size_bytes += report.size_bytes;
        total.first_offset = total.first_offset.or(report.first_offset);
        total.last_offset = report.last_offset.or(total.last_offset);
        for (codec, n) in report.codecs {
            *total.codecs.entry(codec).or_default() += n;
        }
    }
    let mut text = format!(
        "{name}: {} segments, {} batches, {} records, {}, {} bytes, codecs [{}]\n",
        segments.len(),
        total.n_batches,
        total.n_records,
        total.offsets(),
        total.size_bytes,
        total.codecs()
    );
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    crate::common::print_to_stdout(&text)?;
    Ok(clean)
}

/// Writes `<dir>/sample-0/00000000000000000000.log`: one batch per codec, contiguous offsets.
fn write_sample(dir: &Path) -> Result<()> {
    let partition = dir.join("sample-0");
    std::fs::create_dir_all(&partition)
        .with_context(|| format!("cannot create {}", partition.display()))?;
    let mut log = Vec::new();
    let mut next_offset = 0i64;
    for codec in Compression::ALL {
        let mut builder =
            RecordBatchBuilder::new(codec).base_offset(next_offset).partition_leader_epoch(0);
        for idx in 0..3 {
            let key = format!("key-{next_offset}");
            let value = format!("{codec} record {idx}: hello from seglog");
            let headers = [HeaderRef { key: "codec", value: Some(codec.name().as_bytes()) }];
            builder.push(
                1_700_000_000_000 + next_offset,
                Some(key.as_bytes()),
                Some(value.as_bytes()),
                &headers,
            )?;
            next_offset += 1;
        }
        log.extend_from_slice(&builder.build()?);
    }
    let path = partition.join(SegmentFileName::new(0, FileKind::Log).to_name());
    std::fs::write(&path, log).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("created a sample partition at {} (one batch per codec)", partition.display());
    Ok(())
}

/// `./seglog-data`, with a sample partition written first when it does not exist.
fn default_dir() -> Result<PathBuf> {
    let dir = PathBuf::from(DEFAULT_LOG_DIR);
    if !dir.exists() {
        write_sample(&dir)?;
    }
    Ok(dir)
}

/// Runs the command; `Ok(false)` means corruption was found.
pub(crate) fn run(path: Option<PathBuf>, decompressed_bytes_max: usize) -> Result<bool> {
    let limits = DecodeLimits { decompressed_bytes_max };
    let path = path.map_or_else(default_dir, Ok)?;
    let metadata =
        std::fs::metadata(&path).with_context(|| format!("cannot open {}", path.display()))?;
    if metadata.is_file() {
        let report = inspect_segment(&path, limits)?;
        crate::common::print_to_stdout(&format!(
            "{}: {} batches, {} records, {}, {} bytes, codecs [{}], {}\n",
            path.display(),
            report.n_batches,
            report.n_records,
            report.offsets(),
            report.size_bytes,
            report.codecs(),
            report.problem.as_deref().unwrap_or("ok")
        ))?;
        return Ok(report.problem.is_none());
    }
    let dir_name = path.file_name().map(|name| name.to_string_lossy().into_owned());
    if dir_name.as_deref().is_some_and(|name| PartitionDir::parse(name).is_ok())
        && !segments_of(&path)?.is_empty()
    {
        return inspect_partition(&path, limits);
    }
    let mut partitions = Vec::new();
    for entry in
        std::fs::read_dir(&path).with_context(|| format!("cannot list {}", path.display()))?
    {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() && PartitionDir::parse(&name).is_ok() {
            partitions.push(entry.path());
        }
    }
    if partitions.is_empty() {
        bail!("{} holds no partition directories (topic-N)", path.display());
    }
    partitions.sort();
    let mut clean = true;
    for partition in &partitions {
        clean &= inspect_partition(partition, limits)?;
    }
    crate::common::print_to_stdout(&format!(
        "{} partitions, {}\n",
        partitions.len(),
        if clean { "all clean" } else { "PROBLEMS FOUND" }
    ))?;
    Ok(clean)
}
