//! `seglog dump`: Kafka's `kafka-dump-log.sh` (`kafka.tools.DumpLogSegments`, spec §9), line for
//! line in the Kafka 3.3+ format, for `.log`, `.index`, `.timeindex`, `.txnindex`, `.snapshot`
//! and KRaft `.checkpoint` files.
//!
//! What Kafka prints, we print: the same header, batch and record lines on stdout, the same
//! reports on stderr (non-consecutive offsets, index mismatches, time index errors) after all
//! files, in the order Kafka's Scala hash maps give them. Where Kafka would die with a stack
//! trace on a corrupt file, we print one line on stderr naming the file and the byte position,
//! count it as a problem, and go on.
//!
//! A `.log` is read through a window of a few MiB, one batch at a time, so memory stays flat
//! whatever the file's size. A single batch larger than `max(--max-message-size, 64 MiB)` is not
//! read: it and what follows are reported as invalid bytes.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use seglog_format::compression::DECOMPRESSED_BYTES_MAX_DEFAULT;
use seglog_format::schema::kraft;
use seglog_format::schema::message::{Message, to_json};
use seglog_format::{
    AbortedTxn, Batches, Compression, ControlRecordType, DecodeLimits, EndTransactionMarker,
    LegacyEntry, OffsetIndexEntry, Record, RecordBatch, TimeIndexEntry, TimestampType,
};
use seglog_storage::io::{File, Fs, OpenMode, StdFs};

/// Kafka's `--max-message-size` default (5 MiB).
const MAX_MESSAGE_SIZE_DEFAULT: i32 = 5 * 1024 * 1024;
/// Kafka's `--max-bytes` default: no limit.
const MAX_BYTES_DEFAULT: i32 = i32::MAX;
/// A batch up to this size is always read, whatever `--max-message-size` says.
const BATCH_BYTES_MAX_FLOOR: usize = 64 * 1024 * 1024;
/// Bytes of a `.log` read ahead at a time.
const WINDOW_BYTES: usize = 4 * 1024 * 1024;
/// Files larger than this get a progress bar (when stderr is a terminal).
const PROGRESS_BYTES_MIN: u64 = 64 * 1024 * 1024;
/// The largest file Kafka's `FileRecords` opens.
const SEGMENT_BYTES_MAX: u64 = i32::MAX as u64;
/// Bytes up to and including the magic byte of any log entry.
const HEADER_SIZE_UP_TO_MAGIC: u64 = 17;
/// Offset and size: the prefix of every log entry.
const LOG_OVERHEAD: usize = 12;
/// The smallest legal entry body (a v0 message).
const RECORD_OVERHEAD_V0: i32 = 14;
/// The fixed v2 batch header.
const RECORD_BATCH_OVERHEAD: usize = 61;
/// Bytes of an offset index entry.
const OFFSET_ENTRY_BYTES: u64 = 8;
/// Bytes of a time index entry.
const TIME_ENTRY_BYTES: u64 = 12;
/// Bytes of a transaction index entry.
const TXN_ENTRY_BYTES: usize = 34;
/// Kafka searches the last 8 KiB of an index first (`AbstractIndex.warmEntries`).
const WARM_SECTION_BYTES: u64 = 8192;
/// Kafka's default key and value decoder.
const STRING_DECODER_CLASS: &str = "org.apache.kafka.tools.api.StringDecoder";

const _: () = assert!(WINDOW_BYTES >= RECORD_BATCH_OVERHEAD);
const _: () = assert!(BATCH_BYTES_MAX_FLOOR >= WINDOW_BYTES);

/// Arguments of `seglog dump` (Kafka's DumpLogSegments options).
///
/// Prints the contents of Kafka segment files exactly as Kafka's `kafka-dump-log.sh` (3.3+)
/// does: `.log` (and KRaft `.checkpoint`), `.index`, `.timeindex`, `.txnindex` and producer
/// `.snapshot` files.
///
/// Examples:
///   seglog dump --files 00000000000000000000.log --print-data-log
///   seglog dump --files 00000000000000000000.index,00000000000000000000.timeindex
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
#[expect(clippy::struct_excessive_bools, reason = "one flag per Kafka option")]
pub(crate) struct DumpArgs {
    /// REQUIRED: the comma separated list of data and index log files to be dumped.
    #[arg(long, value_name = "file1,file2,...", value_delimiter = ',')]
    files: Vec<String>,
    /// Print the messages' content when dumping data logs (implied by any decoder option).
    #[arg(long)]
    print_data_log: bool,
    /// Iterate records inside batches (implied by --print-data-log).
    #[arg(long)]
    deep_iteration: bool,
    /// Print only the key and payload of each record, not its metadata.
    #[arg(long)]
    skip_record_metadata: bool,
    /// Verify the index against the log without printing its content.
    #[arg(long)]
    verify_index_only: bool,
    /// Only check the index sanity (the check a broker runs at startup).
    #[arg(long)]
    index_sanity_check: bool,
    /// Size of the largest message: the bytes read at each offset index entry, and (when above
    /// 64 MiB) the largest batch read from a `.log`.
    #[arg(long, value_name = "size", default_value_t = MAX_MESSAGE_SIZE_DEFAULT)]
    max_message_size: i32,
    /// Limit the bytes of each `.log` read (whole batches only).
    #[arg(long, value_name = "size", default_value_t = MAX_BYTES_DEFAULT)]
    max_bytes: i32,
    /// How to print record keys.
    #[arg(long, value_enum, value_name = "decoder")]
    key_decoder: Option<DecoderKind>,
    /// Kafka's name for --key-decoder: a decoder class name (StringDecoder, LongDecoder,
    /// IntegerDecoder, in `org.apache.kafka.tools.api` or the deprecated `kafka.serializer`).
    #[arg(long, value_name = "class", num_args = 0..=1, default_missing_value = STRING_DECODER_CLASS)]
    key_decoder_class: Option<String>,
    /// How to print record values.
    #[arg(long, value_enum, value_name = "decoder")]
    value_decoder: Option<DecoderKind>,
    /// Kafka's name for --value-decoder: a decoder class name, as for --key-decoder-class.
    #[arg(long, value_name = "class", num_args = 0..=1, default_missing_value = STRING_DECODER_CLASS)]
    value_decoder_class: Option<String>,
    /// Parse records as `__consumer_offsets` data (JSON, as Kafka prints it).
    #[arg(long, conflicts_with = "transaction_log_decoder")]
    offsets_decoder: bool,
    /// Parse records as `__transaction_state` data.
    #[arg(long)]
    transaction_log_decoder: bool,
    /// Print what this Kafka release's kafka-dump-log.sh prints (2.0 or later; default: the
    /// 3.3+ format).
    #[arg(long, value_name = "version")]
    kafka_version: Option<KafkaVersion>,
}

/// How a key or a value is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DecoderKind {
    /// UTF-8 text, invalid sequences replaced (Kafka's `StringDecoder`).
    String,
    /// Lowercase hexadecimal.
    Hex,
    /// A big-endian int64 from the first 8 bytes (Kafka's `LongDecoder`).
    Long,
    /// A big-endian int32 from the first 4 bytes (Kafka's `IntegerDecoder`).
    Integer,
}

impl DecoderKind {
    /// The decoder for a Kafka decoder class name, and whether Kafka calls the name deprecated.
    fn from_class(class: &str) -> Option<(Self, bool)> {
        let (package, simple) = class.rsplit_once('.')?;
        let deprecated = match package {
            "org.apache.kafka.tools.api" => false,
            "kafka.serializer" => true,
            _ => return None,
        };
        let kind = match simple {
            "StringDecoder" => Self::String,
            "LongDecoder" => Self::Long,
            "IntegerDecoder" => Self::Integer,
            _ => return None,
        };
        Some((kind, deprecated))
    }

    fn decode(self, bytes: &[u8]) -> std::result::Result<String, String> {
        match self {
            Self::String => Ok(String::from_utf8_lossy(bytes).into_owned()),
            Self::Hex => {
                Ok(bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
                    let _ = write!(s, "{b:02x}");
                    s
                }))
            }
            Self::Long => bytes
                .first_chunk::<8>()
                .map(|chunk| i64::from_be_bytes(*chunk).to_string())
                .ok_or_else(|| "java.nio.BufferUnderflowException (LongDecoder)".to_owned()),
            Self::Integer => bytes
                .first_chunk::<4>()
                .map(|chunk| i32::from_be_bytes(*chunk).to_string())
                .ok_or_else(|| "java.nio.BufferUnderflowException (IntegerDecoder)".to_owned()),
        }
    }
}

/// What turns a record's key and value into the `key:` and `payload:` texts (Kafka's
/// `MessageParser`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parser {
    /// Decoders for the key and the value.
    Decoders { key: DecoderKind, value: DecoderKind },
    /// `__consumer_offsets` records as JSON.
    Offsets,
    /// `__transaction_state` records.
    TransactionLog,
}

/// A Kafka release, `major.minor` (a patch number is accepted and ignored: the dump format only
/// changed in minor releases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct KafkaVersion {
    major: u16,
    minor: u16,
}

impl KafkaVersion {
    const fn new(major: u16, minor: u16) -> Self {
        Self { major, minor }
    }

    /// The oldest release whose output can be reproduced.
    const OLDEST: Self = Self::new(2, 0);
    /// The release whose format `seglog dump` prints by default (3.3 up to 4.0 share it).
    const CURRENT: Self = Self::new(4, 0);
}

impl std::str::FromStr for KafkaVersion {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let mut parts = text.split('.');
        let mut number = || parts.next().and_then(|part| part.parse::<u16>().ok());
        let (Some(major), Some(minor)) = (number(), number()) else {
            return Err(format!("{text:?} is not a Kafka version such as 3.3 or 2.8.2"));
        };
        let version = Self::new(major, minor);
        if version < Self::OLDEST {
            return Err(format!("Kafka {text} is older than the oldest supported, 2.0"));
        }
        Ok(version)
    }
}

impl std::fmt::Display for KafkaVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What changed in DumpLogSegments' output between Kafka releases (spec §9.7, checked against
/// the tagged sources of 2.0 to 3.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Format {
    version: KafkaVersion,
}

impl Format {
    fn since(self, major: u16, minor: u16) -> bool {
        self.version >= KafkaVersion::new(major, minor)
    }

    /// Up to 2.1, deep iteration prints record lines instead of batch lines.
    fn record_lines_replace_batch_lines(self) -> bool {
        !self.since(2, 2)
    }

    fn log_header(self) -> &'static str {
        if self.since(3, 3) { "Log starting offset" } else { "Starting offset" }
    }

    /// Up to 2.8 Kafka printed the codec's enum constant (`NONE`), since 3.0 its name.
    fn codec(self, codec: Compression) -> Cow<'static, str> {
        if self.since(3, 0) {
            Cow::Borrowed(codec.name())
        } else {
            Cow::Owned(codec.name().to_ascii_uppercase())
        }
    }

    fn non_consecutive_header(self) -> &'static str {
        if self.since(2, 3) {
            "Non-consecutive offsets in "
        } else {
            "Non-consecutive offsets in :"
        }
    }

    /// The name Kafka's `ControlRecordType` of that release gives a type id.
    fn control_type_name(self, id: i16) -> &'static str {
        let kind = ControlRecordType::from_id(id);
        match kind {
            ControlRecordType::Abort | ControlRecordType::Commit => kind.name(),
            _ if self.since(3, 8) => kind.name(),
            ControlRecordType::LeaderChange
            | ControlRecordType::SnapshotHeader
            | ControlRecordType::SnapshotFooter
                if self.since(3, 0) =>
            {
                kind.name()
            }
            _ if self.since(2, 7) && id == 2 => "QUORUM_REASSIGNMENT",
            _ if self.since(2, 7) && id == 3 => "LEADER_CHANGE",
            _ => "UNKNOWN",
        }
    }
}

/// The options after Kafka's implications (`shouldPrintDataLog`, `isDeepIteration`).
#[derive(Debug, Clone)]
#[expect(clippy::struct_excessive_bools, reason = "one flag per Kafka option")]
struct Options {
    print_data_log: bool,
    deep_iteration: bool,
    skip_record_metadata: bool,
    verify_only: bool,
    index_sanity_only: bool,
    max_message_size: i32,
    max_bytes: i32,
    parser: Parser,
    /// Lines Kafka prints when it builds the parser (deprecated decoder class names).
    parser_notices: Vec<String>,
    /// The largest batch read from a `.log`.
    batch_bytes_max: usize,
    limits: DecodeLimits,
    format: Format,
}

impl Options {
    fn new(args: &DumpArgs) -> std::result::Result<Self, String> {
        let format = Format { version: args.kafka_version.unwrap_or(KafkaVersion::CURRENT) };
        let version = format.version;
        let needs = |what: &str, major: u16, minor: u16| {
            if format.since(major, minor) {
                Ok(())
            } else {
                Err(format!(
                    "{what} needs --kafka-version {major}.{minor} or later (not {version})"
                ))
            }
        };
        if args.max_bytes != MAX_BYTES_DEFAULT {
            needs("--max-bytes", 3, 3)?;
        }
        if args.skip_record_metadata {
            needs("--skip-record-metadata", 2, 8)?;
        }
        if args.offsets_decoder {
            needs("--offsets-decoder (JSON output)", 3, 8)?;
        }
        if args.transaction_log_decoder {
            needs("--transaction-log-decoder", 3, 0)?;
        }
        let mut notices = Vec::new();
        // Kafka builds the value decoder first, then the key decoder.
        let value = resolve_decoder(
            args.value_decoder,
            args.value_decoder_class.as_deref(),
            format,
            &mut notices,
        )?;
        let key = resolve_decoder(
            args.key_decoder,
            args.key_decoder_class.as_deref(),
            format,
            &mut notices,
        )?;
        let parser = if args.offsets_decoder {
            notices.clear();
            Parser::Offsets
        } else if args.transaction_log_decoder {
            notices.clear();
            Parser::TransactionLog
        } else {
            Parser::Decoders { key, value }
        };
        let print_data_log = args.print_data_log
            || args.offsets_decoder
            || args.transaction_log_decoder
            || args.key_decoder.is_some()
            || args.key_decoder_class.is_some()
            || args.value_decoder.is_some()
            || args.value_decoder_class.is_some();
        let batch_bytes_max =
            usize::try_from(args.max_message_size).unwrap_or(0).max(BATCH_BYTES_MAX_FLOOR);
        Ok(Self {
            print_data_log,
            deep_iteration: args.deep_iteration || print_data_log,
            skip_record_metadata: args.skip_record_metadata,
            verify_only: args.verify_index_only,
            index_sanity_only: args.index_sanity_check,
            max_message_size: args.max_message_size,
            max_bytes: args.max_bytes,
            parser,
            parser_notices: notices,
            batch_bytes_max,
            limits: DecodeLimits {
                decompressed_bytes_max: batch_bytes_max.max(DECOMPRESSED_BYTES_MAX_DEFAULT),
            },
            format,
        })
    }
}

fn resolve_decoder(
    kind: Option<DecoderKind>,
    class: Option<&str>,
    format: Format,
    notices: &mut Vec<String>,
) -> std::result::Result<DecoderKind, String> {
    match (kind, class) {
        (Some(_), Some(_)) => Err("give a decoder or a decoder class, not both".to_owned()),
        (Some(kind), None) => Ok(kind),
        (None, None) => Ok(DecoderKind::String),
        (None, Some(class)) => {
            let (kind, deprecated) = DecoderKind::from_class(class).ok_or_else(|| {
                format!(
                    "unsupported decoder class {class}: use StringDecoder, LongDecoder or \
                     IntegerDecoder (org.apache.kafka.tools.api), or --key-decoder/--value-decoder"
                )
            })?;
            // Kafka 3.8 moved the decoders to `org.apache.kafka.tools.api`.
            if deprecated && format.since(3, 8) {
                let simple = class.rsplit_once('.').map_or(class, |(_, simple)| simple);
                notices.push(format!(
                    "{class} is deprecated. Please use org.apache.kafka.tools.api.{simple} instead"
                ));
            }
            Ok(kind)
        }
    }
}

/// A path given on the command line, shown as Java's `java.io.File` shows it.
#[derive(Debug, Clone)]
struct JavaFile {
    /// `File.toString`: the path with repeated and trailing slashes removed.
    shown: String,
    /// `File.getName`: the last component.
    name: String,
    /// `File.getAbsolutePath`: resolved against the working directory, not canonicalized.
    absolute: String,
    /// The path to open.
    path: PathBuf,
}

impl JavaFile {
    fn new(arg: &str, cwd: &str) -> Self {
        let shown = normalize_java_path(arg);
        let name = shown.rsplit('/').next().unwrap_or_default().to_owned();
        let absolute = if shown.starts_with('/') {
            shown.clone()
        } else if shown.is_empty() {
            cwd.to_owned()
        } else if cwd.ends_with('/') {
            format!("{cwd}{shown}")
        } else {
            format!("{cwd}/{shown}")
        };
        Self { path: PathBuf::from(&shown), shown, name, absolute }
    }

    /// The file with the same base name and another suffix, in the same directory (Kafka's
    /// `new File(file.getAbsoluteFile.getParent, name.split("\\.")(0) + suffix)`).
    fn sibling(&self, suffix: &str) -> Self {
        let stem = self.name.split('.').next().unwrap_or_default();
        let parent = self.absolute.rsplit_once('/').map_or("", |(parent, _)| parent);
        let absolute = format!("{parent}/{stem}{suffix}");
        Self {
            shown: absolute.clone(),
            name: format!("{stem}{suffix}"),
            path: PathBuf::from(&absolute),
            absolute,
        }
    }

    /// The number before the first `.` of the name (Kafka's `name.split("\\.")(0).toLong`).
    fn base_offset(&self) -> std::result::Result<i64, Problem> {
        let digits = self.name.split('.').next().unwrap_or_default();
        digits.parse::<i64>().map_err(|_| {
            Problem::new(format!(
                "For input string: \"{digits}\" (the name must start with an offset)"
            ))
        })
    }
}

/// Java's `UnixFileSystem.normalize`: no repeated `/`, no trailing `/`.
fn normalize_java_path(path: &str) -> String {
    let mut normalized = String::with_capacity(path.len());
    for ch in path.chars() {
        if ch == '/' && normalized.ends_with('/') {
            continue;
        }
        normalized.push(ch);
    }
    if normalized.len() > 1 && normalized.ends_with('/') {
        normalized.pop();
    }
    normalized
}

/// Something Kafka would have died on: reported as one line on stderr.
#[derive(Debug)]
struct Problem {
    position: Option<u64>,
    message: String,
}

impl Problem {
    fn new(message: impl Into<String>) -> Self {
        Self { position: None, message: message.into() }
    }

    fn at(position: u64, message: impl Into<String>) -> Self {
        Self { position: Some(position), message: message.into() }
    }

    fn io(what: &JavaFile, error: &io::Error) -> Self {
        Self::new(format!("cannot read {}: {error}", what.shown))
    }
}

/// What stops dumping a file: a problem in it, or a failed write to stdout.
#[derive(Debug)]
enum Stop {
    Problem(Problem),
    Output(io::Error),
}

impl From<Problem> for Stop {
    fn from(problem: Problem) -> Self {
        Self::Problem(problem)
    }
}

impl From<io::Error> for Stop {
    fn from(error: io::Error) -> Self {
        Self::Output(error)
    }
}

type Step<T = ()> = std::result::Result<T, Stop>;

/// How Kafka's code writes into one of its report maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum PutPolicy {
    /// `map.put(file, list)` after every new pair (index mismatches, non-consecutive offsets).
    #[default]
    EveryPair,
    /// `map.put(file, buffer)` only when the file is first seen (time index errors).
    FirstPair,
}

/// Per-file lists of pairs that Kafka keeps in a Scala 2.13 `mutable.HashMap[String, _]` and
/// prints in that map's iteration order, which [`ReportMap::in_scala_order`] reproduces.
#[derive(Debug, Default)]
struct ReportMap {
    entries: Vec<(String, Vec<(i64, i64)>)>,
    policy: PutPolicy,
    /// The hash table's length: 16, doubled whenever a `put` finds it 75 % full (Scala checks
    /// before looking the key up, so updating an existing key can grow the table too).
    table_len: usize,
}

/// Scala's `mutable.HashMap` and `HashSet` start with 16 buckets.
const SCALA_TABLE_LEN_INITIAL: usize = 16;

/// Scala's `newThreshold`: 75 % of the table (exact in integers for powers of two).
const fn scala_threshold(table_len: usize) -> usize {
    table_len / 4 * 3
}

impl ReportMap {
    fn new(policy: PutPolicy) -> Self {
        Self { entries: Vec::new(), policy, table_len: SCALA_TABLE_LEN_INITIAL }
    }

    fn push(&mut self, key: &str, pair: (i64, i64)) {
        let existing = self.entries.iter().position(|(k, _)| k == key);
        if (existing.is_none() || self.policy == PutPolicy::EveryPair)
            && self.entries.len() + 1 >= scala_threshold(self.table_len)
        {
            self.table_len *= 2;
        }
        match existing.and_then(|idx| self.entries.get_mut(idx)) {
            Some((_, pairs)) => pairs.push(pair),
            None => self.entries.push((key.to_owned(), vec![pair])),
        }
    }

    fn in_scala_order(&self) -> impl Iterator<Item = &(String, Vec<(i64, i64)>)> {
        let mut order: Vec<(usize, i32, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(idx, (key, _))| {
                let hash = scala_improve_hash(seglog_format::java::string_hash(key));
                (scala_bucket(hash, self.table_len), hash, idx)
            })
            .collect();
        order.sort_unstable();
        order.into_iter().filter_map(|(_, _, idx)| self.entries.get(idx))
    }
}

/// Scala 2.13's `improveHash`: the high 16 bits folded into the low ones.
fn scala_improve_hash(hash: i32) -> i32 {
    hash ^ ((hash as u32) >> 16) as i32
}

/// The bucket of an improved hash. Within a bucket Scala keeps nodes sorted by hash (ties in
/// insertion order), and growing the table keeps that order, so iteration is by (bucket, hash,
/// insertion).
fn scala_bucket(improved_hash: i32, table_len: usize) -> usize {
    (improved_hash as u32 as usize) & (table_len - 1)
}

/// Kafka's `TimeIndexDumpErrors`.
#[derive(Debug)]
struct TimeIndexErrors {
    mismatches: ReportMap,
    out_of_order: ReportMap,
    shallow_offset_not_found: ReportMap,
}

/// One `seglog dump` run.
struct Dumper<'a> {
    options: Options,
    out: BufWriter<&'a mut dyn Write>,
    err: &'a mut dyn Write,
    cwd: String,
    index_mismatches: ReportMap,
    time_index_errors: TimeIndexErrors,
    non_consecutive: ReportMap,
    problems: bool,
    show_progress: bool,
}

/// Runs `seglog dump`; `Ok(false)` when problems were found (corrupt data, invalid batches,
/// trailing bytes, index mismatches, unreadable files).
pub(crate) fn run(args: &DumpArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<bool> {
    let files: Vec<&str> = {
        // Java's `String.split` drops trailing empty strings.
        let mut files: Vec<&str> = args.files.iter().map(String::as_str).collect();
        while files.last().is_some_and(|file| file.is_empty()) {
            files.pop();
        }
        files
    };
    if files.is_empty() {
        writeln!(err, "Missing required argument \"[files]\"").context("cannot write to stderr")?;
        return Ok(false);
    }
    let options = match Options::new(args) {
        Ok(options) => options,
        Err(message) => {
            writeln!(err, "seglog dump: {message}").context("cannot write to stderr")?;
            return Ok(false);
        }
    };
    let cwd = std::env::current_dir()
        .context("cannot read the working directory")?
        .to_string_lossy()
        .into_owned();
    let mut dumper = Dumper {
        options,
        out: BufWriter::with_capacity(64 * 1024, out),
        err,
        cwd,
        index_mismatches: ReportMap::new(PutPolicy::EveryPair),
        time_index_errors: TimeIndexErrors {
            mismatches: ReportMap::new(PutPolicy::FirstPair),
            out_of_order: ReportMap::new(PutPolicy::FirstPair),
            shallow_offset_not_found: ReportMap::new(PutPolicy::FirstPair),
        },
        non_consecutive: ReportMap::new(PutPolicy::EveryPair),
        problems: false,
        show_progress: io::stderr().is_terminal(),
    };
    match dumper.run(&files) {
        Ok(()) => {}
        // A closed pipe (`seglog dump ... | head`) ends the dump quietly.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => return Ok(!dumper.problems),
        Err(error) => return Err(error).context("cannot write the dump"),
    }
    Ok(!dumper.problems)
}

impl Dumper<'_> {
    fn run(&mut self, files: &[&str]) -> io::Result<()> {
        for arg in files {
            let file = JavaFile::new(arg, &self.cwd);
            writeln!(self.out, "Dumping {}", file.shown)?;
            let suffix = file.name.rfind('.').map(|at| &file.name[at..]);
            let step = match suffix {
                Some(".log") => self.dump_log(&file),
                // KRaft snapshots are dumped since Kafka 3.3.
                Some(".checkpoint") if self.options.format.since(3, 3) => self.dump_log(&file),
                Some(".index") => self.dump_index(&file),
                Some(".timeindex") => self.dump_time_index(&file),
                Some(".snapshot") => self.dump_producer_snapshot(&file),
                Some(".txnindex") => self.dump_txn_index(&file),
                _ => {
                    self.out.flush()?;
                    writeln!(self.err, "Ignoring unknown file {}", file.shown)?;
                    Ok(())
                }
            };
            match step {
                Ok(()) => {}
                Err(Stop::Output(error)) => return Err(error),
                Err(Stop::Problem(problem)) => self.report(&file, &problem)?,
            }
        }
        self.out.flush()?;
        self.print_reports()
    }

    /// Writes a problem line on stderr.
    fn report(&mut self, file: &JavaFile, problem: &Problem) -> io::Result<()> {
        self.problems = true;
        self.out.flush()?;
        match problem.position {
            Some(position) => writeln!(
                self.err,
                "seglog dump: {} at byte position {position}: {}",
                file.shown, problem.message
            ),
            None => writeln!(self.err, "seglog dump: {}: {}", file.shown, problem.message),
        }
    }

    /// The stderr reports Kafka prints after all files.
    fn print_reports(&mut self) -> io::Result<()> {
        for (file, pairs) in self.index_mismatches.in_scala_order() {
            self.problems = true;
            writeln!(self.err, "Mismatches in :{file}")?;
            // Kafka prepends to the list, so the latest comes first.
            for (index_offset, log_offset) in pairs.iter().rev() {
                writeln!(self.err, "  Index offset: {index_offset}, log offset: {log_offset}")?;
            }
        }
        let errors = &self.time_index_errors;
        for (file, pairs) in errors.mismatches.in_scala_order() {
            self.problems = true;
            writeln!(self.err, "Found timestamp mismatch in :{file}")?;
            for (index_timestamp, log_timestamp) in pairs {
                writeln!(
                    self.err,
                    "  Index timestamp: {index_timestamp}, log timestamp: {log_timestamp}"
                )?;
            }
        }
        for (file, pairs) in errors.out_of_order.in_scala_order() {
            self.problems = true;
            writeln!(self.err, "Found out of order timestamp in :{file}")?;
            for (index_timestamp, previous) in pairs {
                writeln!(
                    self.err,
                    "  Index timestamp: {index_timestamp}, Previously indexed timestamp: {previous}"
                )?;
            }
        }
        for (_, pairs) in errors.shallow_offset_not_found.in_scala_order() {
            self.problems = true;
            writeln!(self.err, "The following indexed offsets are not found in the log.")?;
            for (indexed_offset, log_offset) in pairs {
                writeln!(
                    self.err,
                    "Indexed offset: {indexed_offset}, found log offset: {log_offset}"
                )?;
            }
        }
        for (file, pairs) in self.non_consecutive.in_scala_order() {
            writeln!(self.err, "{}{file}", self.options.format.non_consecutive_header())?;
            for (first, second) in pairs.iter().rev() {
                writeln!(self.err, "  {first} is followed by {second}")?;
            }
        }
        self.err.flush()
    }
}

// ---------------------------------------------------------------------------------------------
// .log
// ---------------------------------------------------------------------------------------------

/// What the walker found next in a `.log`.
enum Next<'w> {
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
struct LogWalker {
    file: Box<dyn File>,
    end: u64,
    window: Vec<u8>,
    /// File position of `window[0]`.
    window_start: u64,
    /// Index in `window` of the next entry.
    next_idx: usize,
    batch_bytes_max: usize,
}

impl LogWalker {
    fn new(file: Box<dyn File>, end: u64, batch_bytes_max: usize) -> Self {
        Self { file, end, window: Vec::new(), window_start: 0, next_idx: 0, batch_bytes_max }
    }

    fn position(&self) -> u64 {
        self.window_start + self.next_idx as u64
    }

    /// Makes at least `needed` bytes available from `next_idx` (the caller checked `end`).
    fn fill(&mut self, needed: usize) -> io::Result<()> {
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

    fn next_entry(&mut self) -> io::Result<Next<'_>> {
        let position = self.position();
        if position + HEADER_SIZE_UP_TO_MAGIC >= self.end {
            return Ok(Next::End);
        }
        self.fill(HEADER_SIZE_UP_TO_MAGIC as usize)?;
        let size = self
            .window
            .get(self.next_idx + 8..self.next_idx + 12)
            .and_then(|bytes| bytes.first_chunk::<4>())
            .map_or(0, |bytes| i32::from_be_bytes(*bytes));
        if size < RECORD_OVERHEAD_V0 {
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
enum Entry<'a> {
    V2(RecordBatch<'a>),
    Legacy(LegacyEntry<'a>),
}

impl<'a> Entry<'a> {
    fn size_bytes(&self) -> usize {
        match self {
            Self::V2(batch) => batch.size_bytes(),
            Self::Legacy(entry) => entry.as_bytes().len(),
        }
    }

    fn new(bytes: &'a [u8]) -> std::result::Result<Self, String> {
        let magic = bytes.get(16).map_or(0, |&byte| byte as i8);
        if magic >= 2 {
            RecordBatch::new(bytes).map(Self::V2).map_err(|error| error.to_string())
        } else {
            LegacyEntry::new(bytes).map(Self::Legacy).map_err(|error| error.to_string())
        }
    }

    fn magic(&self) -> i8 {
        match self {
            Self::V2(batch) => batch.magic(),
            Self::Legacy(entry) => entry.magic(),
        }
    }

    fn timestamp_type(&self) -> TimestampType {
        match self {
            Self::V2(batch) => batch.timestamp_type(),
            Self::Legacy(entry) => entry.timestamp_type(),
        }
    }

    fn is_control(&self) -> bool {
        match self {
            Self::V2(batch) => batch.is_control_batch(),
            Self::Legacy(_) => false,
        }
    }

    /// The codec, as Kafka's `CompressionType.forId` reads it (zstd is nameable in any magic).
    fn compression(&self) -> std::result::Result<Compression, String> {
        let id = match self {
            Self::V2(batch) => (batch.attributes() as u8) & 0x07,
            Self::Legacy(entry) => entry.attributes() & 0x07,
        };
        Compression::from_id(id).map_err(|_| format!("Unknown compression type id: {id}"))
    }

    /// Kafka's `isValid`: for v2 the size and the CRC-32C (not the magic), for legacy the CRC-32.
    fn is_valid(&self) -> bool {
        match self {
            Self::V2(batch) => {
                batch.size_bytes() >= RECORD_BATCH_OVERHEAD && batch.crc() == batch.compute_crc()
            }
            Self::Legacy(entry) => entry.crc() == entry.compute_crc(),
        }
    }
}

/// Java's `OptionalLong.toString`.
fn optional_long(value: Option<i64>) -> String {
    value.map_or_else(|| "OptionalLong.empty".to_owned(), |value| format!("OptionalLong[{value}]"))
}

/// Kafka's batch line (`printBatchLevel`), without its newline.
fn batch_line(
    format: Format,
    entry: &Entry<'_>,
    position: u64,
) -> std::result::Result<String, String> {
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

/// A record with what Kafka's record line needs beyond [`Record`].
struct DumpRecord<'a> {
    record: Record<'a>,
    /// For legacy records: `isValid` and the stored CRC.
    legacy_check: Option<(bool, u32)>,
    /// The batch's `baseOffset` (for a legacy wrapper, its first inner offset).
    batch_base_offset: i64,
}

/// The records of one entry, decoded as Kafka's iterator would, or the reason it would throw.
fn entry_records<'a>(
    entry: &Entry<'a>,
    limits: DecodeLimits,
    sink: &mut dyn FnMut(DumpRecord<'_>) -> Step,
) -> Step {
    match entry {
        Entry::V2(batch) => {
            let batch_base_offset = batch.base_offset();
            // Kafka's iterator yields nothing for a count of 0, whatever follows the header.
            if batch.records_count() == 0 {
                return Ok(());
            }
            let records = batch.records(limits).map_err(|error| Problem::new(error.to_string()))?;
            if entry.compression().ok() == Some(Compression::None) {
                for record in &records {
                    let record = record.map_err(|error| Problem::new(error.to_string()))?;
                    sink(DumpRecord { record, legacy_check: None, batch_base_offset })?;
                }
            } else {
                // Kafka decompresses a whole batch before yielding its first record.
                let all: Vec<Record<'_>> = records
                    .iter()
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|error| Problem::new(error.to_string()))?;
                for record in all {
                    sink(DumpRecord { record, legacy_check: None, batch_base_offset })?;
                }
            }
            Ok(())
        }
        Entry::Legacy(legacy) => legacy_records(legacy, limits, sink),
    }
}

fn legacy_records(
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
            .filter_map(std::result::Result::ok)
            .map(|item| (item.batch.is_valid(), item.batch.crc()))
            .collect(),
        seglog_format::legacy::LegacyRecords::Single(_) => Vec::new(),
    };
    let all: Vec<Record<'_>> = records
        .iter()
        .collect::<std::result::Result<_, _>>()
        .map_err(|error| Problem::new(error.to_string()))?;
    let batch_base_offset = all.first().map_or(legacy.offset(), |record| record.offset);
    for (record, check) in all.into_iter().zip(inner) {
        sink(DumpRecord { record, legacy_check: Some(check), batch_base_offset })?;
    }
    Ok(())
}

/// A KRaft control record's value as Kafka's JSON.
fn kraft_json(message: &Message, value: &[u8]) -> std::result::Result<String, String> {
    kraft::decode(message, value).map(|value| to_json(&value)).map_err(|error| error.to_string())
}

/// Renders the control-record part of a record line.
fn control_info(format: Format, record: &Record<'_>) -> std::result::Result<String, String> {
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
struct LineContext<'e, 'a> {
    options: &'e Options,
    entry: &'e Entry<'a>,
    position: u64,
}

/// A record's header keys as Kafka prints them: `[k1,k2]`.
fn header_keys(record: &Record<'_>) -> String {
    let keys: Vec<Cow<'_, str>> = record.headers.iter().map(|header| header.key_str()).collect();
    format!("[{}]", keys.join(","))
}

/// The record line of Kafka 2.0 and 2.1, printed instead of the batch line.
fn record_line_before_2_2(
    context: &LineContext<'_, '_>,
    dump: &DumpRecord<'_>,
    codec: &str,
    is_valid: bool,
    crc: &str,
) -> std::result::Result<String, String> {
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
        Entry::V2(batch) => {
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
        Entry::Legacy(_) => {
            let _ = write!(line, " crc: {crc}");
        }
    }
    if entry.is_control() {
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
fn record_line(
    context: &LineContext<'_, '_>,
    dump: &DumpRecord<'_>,
) -> std::result::Result<String, String> {
    let (options, entry, format) = (context.options, context.entry, context.options.format);
    let record = &dump.record;
    let mut line = String::with_capacity(128);
    let mut prefix = "| ";
    let size = |bytes: Option<&[u8]>| bytes.map_or(-1, |bytes| bytes.len() as i64);
    let (key_size, value_size) = (size(record.key), size(record.value));
    let (offset, timestamp_type, timestamp) =
        (record.offset, entry.timestamp_type(), record.timestamp);
    let codec = format.codec(entry.compression()?);
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
                    Entry::V2(batch) => (
                        batch.base_sequence(),
                        batch.last_sequence(),
                        batch.producer_epoch(),
                        batch.partition_leader_epoch(),
                        batch.last_offset(),
                    ),
                    Entry::Legacy(legacy) => (-1, -1, -1, -1, legacy.offset()),
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
        if entry.is_control() {
            line.push_str(&control_info(format, record)?);
        }
    }
    if options.print_data_log && !entry.is_control() {
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
fn parse_record(
    parser: Parser,
    record: &Record<'_>,
) -> std::result::Result<(Option<String>, Option<String>), String> {
    match parser {
        Parser::Decoders { key, value } => {
            let key = record.key.map(|bytes| key.decode(bytes)).transpose()?;
            let value = record.value.map(|bytes| value.decode(bytes)).transpose()?;
            Ok((key, value))
        }
        Parser::Offsets => coordinator::offsets_key_value(record),
        Parser::TransactionLog => coordinator::transaction_key_value(record),
    }
}

/// A progress bar on stderr for a large file, when stderr is a terminal.
fn progress_bar(show: bool, len: u64, name: &str) -> Option<indicatif::ProgressBar> {
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
    fn open(file: &JavaFile) -> std::result::Result<Box<dyn File>, Problem> {
        StdFs.open(&file.path, OpenMode::Read).map_err(|error| Problem::io(file, &error))
    }

    /// Kafka's `FileRecords.open`: refuses files above 2 GiB - 1.
    fn open_records(file: &JavaFile) -> std::result::Result<(Box<dyn File>, u64), Problem> {
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

    fn dump_log(&mut self, file: &JavaFile) -> Step {
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
    fn walk_log(
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

    fn suspend_report(
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

    fn dump_records(
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
fn parse_snapshot_name(name: &str) -> Option<(i64, i32)> {
    let offset = name.get(..20)?.parse::<i64>().ok()?;
    let epoch = name.get(21..31)?.parse::<i32>().ok()?;
    Some((offset, epoch))
}

// ---------------------------------------------------------------------------------------------
// .index and .timeindex
// ---------------------------------------------------------------------------------------------

/// An index file read as Kafka reads a read-only index: `entries = length / entry size`,
/// zero-filled preallocation included.
struct IndexReader {
    file: Box<dyn File>,
    len: u64,
    entry_bytes: u64,
    base_offset: i64,
}

impl IndexReader {
    fn entries(&self) -> u64 {
        self.len / self.entry_bytes
    }

    fn raw(&self, entry_idx: u64) -> io::Result<[u8; 12]> {
        let mut bytes = [0u8; 12];
        let slot = bytes.get_mut(..self.entry_bytes as usize).unwrap_or_default();
        self.file.read_exact_at(slot, entry_idx * self.entry_bytes)?;
        Ok(bytes)
    }

    /// Offset index entry `entry_idx` as (absolute offset, position).
    fn offset_entry(&self, entry_idx: u64) -> std::result::Result<(i64, u32), String> {
        let bytes = self.raw(entry_idx).map_err(|error| error.to_string())?;
        let entry = OffsetIndexEntry::read(&bytes, 0).map_err(|error| error.to_string())?;
        Ok((self.base_offset + i64::from(entry.relative_offset), entry.position))
    }

    /// Time index entry `entry_idx` as (timestamp, absolute offset).
    fn time_entry(&self, entry_idx: u64) -> std::result::Result<(i64, i64), String> {
        let bytes = self.raw(entry_idx).map_err(|error| error.to_string())?;
        let entry = TimeIndexEntry::read(&bytes, 0).map_err(|error| error.to_string())?;
        Ok((entry.timestamp, self.base_offset + i64::from(entry.relative_offset)))
    }

    /// Kafka's `OffsetIndex.lookup`: the position of the largest entry at or below `target`
    /// found by `AbstractIndex`'s warm-section binary search (over every slot, as Kafka does,
    /// zero-filled ones included), or 0.
    fn lookup_position(&self, target: i64) -> std::result::Result<u32, String> {
        let entries = self.entries();
        if entries == 0 {
            return Ok(0);
        }
        let offset_at = |slot: u64| self.offset_entry(slot).map(|(offset, _)| offset);
        let warm_entries = WARM_SECTION_BYTES / self.entry_bytes;
        let first_hot = entries.saturating_sub(1).saturating_sub(warm_entries);
        let slot = if offset_at(first_hot)? < target {
            Some(self.binary_search(target, first_hot, entries - 1)?)
        } else if offset_at(0)? > target {
            None
        } else {
            Some(self.binary_search(target, 0, first_hot)?)
        };
        match slot {
            None => Ok(0),
            Some(slot) => self.offset_entry(slot).map(|(_, position)| position),
        }
    }

    fn binary_search(&self, target: i64, begin: u64, end: u64) -> std::result::Result<u64, String> {
        let (mut lo, mut hi) = (begin, end);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let (found, _) = self.offset_entry(mid)?;
            match found.cmp(&target) {
                std::cmp::Ordering::Greater => hi = mid - 1,
                std::cmp::Ordering::Less => lo = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Ok(lo)
    }
}

/// Reads entry headers of a `.log` at arbitrary positions (Kafka's `FileRecords.slice` plus
/// `FileLogInputStream`), for index verification.
struct LogProbe {
    file: Box<dyn File>,
    len: u64,
}

/// An entry found by [`LogProbe::entry_at`].
struct ProbedEntry {
    last_offset: i64,
    size_bytes: u64,
}

impl LogProbe {
    /// The entry at `position` if it lies whole before `end`; `Ok(None)` where Kafka's stream
    /// ends; `Err` where Kafka throws.
    fn entry_at(
        &self,
        position: u64,
        end: u64,
    ) -> std::result::Result<Option<ProbedEntry>, String> {
        if position + HEADER_SIZE_UP_TO_MAGIC >= end {
            return Ok(None);
        }
        let mut header = [0u8; RECORD_BATCH_OVERHEAD];
        let header_len = (self.len - position).min(RECORD_BATCH_OVERHEAD as u64) as usize;
        let header = header.get_mut(..header_len).unwrap_or_default();
        self.file.read_exact_at(header, position).map_err(|error| error.to_string())?;
        let field = |at: usize| header.get(at..at + 8).and_then(|b| b.first_chunk::<8>()).copied();
        let size = header
            .get(8..12)
            .and_then(|bytes| bytes.first_chunk::<4>())
            .map_or(0, |bytes| i32::from_be_bytes(*bytes));
        if size < RECORD_OVERHEAD_V0 {
            return Err(format!(
                "Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})"
            ));
        }
        let size_bytes = LOG_OVERHEAD as u64 + size as u64;
        if position + size_bytes > end {
            return Ok(None);
        }
        let offset = field(0).map_or(0, i64::from_be_bytes);
        let magic = header.get(16).map_or(0, |&byte| byte as i8);
        let last_offset = if magic < 2 {
            offset
        } else {
            let delta = header
                .get(23..27)
                .and_then(|bytes| bytes.first_chunk::<4>())
                .map(|bytes| i32::from_be_bytes(*bytes))
                .ok_or("Failed to read `record batch header` from file channel: end of file")?;
            offset.wrapping_add(i64::from(delta))
        };
        Ok(Some(ProbedEntry { last_offset, size_bytes }))
    }

    fn read(&self, position: u64, size_bytes: u64) -> std::result::Result<Vec<u8>, String> {
        let mut bytes = vec![0u8; usize::try_from(size_bytes).map_err(|error| error.to_string())?];
        self.file.read_exact_at(&mut bytes, position).map_err(|error| error.to_string())?;
        Ok(bytes)
    }
}

impl Dumper<'_> {
    fn open_index(
        file: &JavaFile,
        entry_bytes: u64,
        base_offset: i64,
    ) -> std::result::Result<IndexReader, Problem> {
        let handle = Self::open(file)?;
        let len = handle.len().map_err(|error| Problem::io(file, &error))?;
        Ok(IndexReader { file: handle, len, entry_bytes, base_offset })
    }

    fn dump_index(&mut self, file: &JavaFile) -> Step {
        let base_offset = file.base_offset()?;
        let log_file = file.sibling(".log");
        let (log, log_len) = Self::open_records(&log_file)?;
        let index = Self::open_index(file, OFFSET_ENTRY_BYTES, base_offset)?;
        let entries = index.entries();
        if entries == 0 {
            writeln!(self.out, "{} is empty.", file.shown)?;
            return Ok(());
        }
        if self.options.index_sanity_only {
            let (last_offset, _) = index.offset_entry(entries - 1).map_err(Problem::new)?;
            if last_offset < base_offset {
                return Err(Problem::new(format!(
                    "Corrupt index found, index file {} has non-zero size but the last offset is \
                     {last_offset} which is less than the base offset {base_offset}",
                    file.absolute
                ))
                .into());
            }
            if !index.len.is_multiple_of(OFFSET_ENTRY_BYTES) {
                return Err(Problem::new(format!(
                    "Index file {} is corrupt, found {} bytes which is neither positive nor a \
                     multiple of {OFFSET_ENTRY_BYTES}",
                    file.absolute, index.len
                ))
                .into());
            }
            writeln!(self.out, "{} passed sanity check.", file.shown)?;
            return Ok(());
        }
        if self.options.max_message_size < 0 {
            return Err(
                Problem::new(format!("Invalid size: {}", self.options.max_message_size)).into()
            );
        }
        let probe = LogProbe { file: log, len: log_len };
        for entry_idx in 0..entries {
            let at = entry_idx * OFFSET_ENTRY_BYTES;
            let (offset, position) =
                index.offset_entry(entry_idx).map_err(|message| Problem::at(at, message))?;
            // A preallocated index ends in zero entries; Kafka stops at the first one.
            if offset == base_offset && entry_idx > 0 {
                return Ok(());
            }
            let position = u64::from(position);
            if position > log_len {
                return Err(Problem::at(
                    at,
                    format!(
                        "Slice from position {position} exceeds end position of {}",
                        log_file.shown
                    ),
                )
                .into());
            }
            let end = (position + self.options.max_message_size as u64).min(log_len);
            let first = probe
                .entry_at(position, end)
                .map_err(|message| Problem::at(at, format!("{message} (log position {position})")))?
                .ok_or_else(|| {
                    Problem::at(
                        at,
                        format!("java.util.NoSuchElementException: no whole batch at log position {position} within --max-message-size"),
                    )
                })?;
            if first.last_offset != offset {
                self.index_mismatches.push(&file.absolute, (offset, first.last_offset));
            }
            if !self.options.verify_only {
                writeln!(self.out, "offset: {offset} position: {position}")?;
            }
        }
        Ok(())
    }

    fn dump_time_index(&mut self, file: &JavaFile) -> Step {
        let base_offset = file.base_offset()?;
        let (log, log_len) = Self::open_records(&file.sibling(".log"))?;
        let offset_index =
            Self::open_index(&file.sibling(".index"), OFFSET_ENTRY_BYTES, base_offset)?;
        let time_index = Self::open_index(file, TIME_ENTRY_BYTES, base_offset)?;
        let entries = time_index.entries();
        if self.options.index_sanity_only {
            Self::time_index_sanity_check(file, &time_index)?;
            writeln!(self.out, "{} passed sanity check.", file.shown)?;
            return Ok(());
        }
        let probe = LogProbe { file: log, len: log_len };
        let mut previous_timestamp = -1i64;
        for entry_idx in 0..entries {
            let at = entry_idx * TIME_ENTRY_BYTES;
            let (timestamp, offset) =
                time_index.time_entry(entry_idx).map_err(|message| Problem::at(at, message))?;
            if offset == base_offset && entry_idx > 0 {
                return Ok(());
            }
            let position =
                offset_index.lookup_position(offset).map_err(|message| Problem::at(at, message))?;
            self.check_time_entry(
                file,
                &probe,
                u64::from(position),
                timestamp,
                offset,
                previous_timestamp,
            )
            .map_err(|message| Problem::at(at, message))?;
            if !self.options.verify_only {
                writeln!(self.out, "timestamp: {timestamp} offset: {offset}")?;
            }
            previous_timestamp = timestamp;
        }
        Ok(())
    }

    fn time_index_sanity_check(
        file: &JavaFile,
        index: &IndexReader,
    ) -> std::result::Result<(), Problem> {
        let entries = index.entries();
        if entries != 0 {
            let (last_timestamp, last_offset) =
                index.time_entry(entries - 1).map_err(Problem::new)?;
            let (first_timestamp, _) = index.time_entry(0).map_err(Problem::new)?;
            if last_timestamp < first_timestamp {
                return Err(Problem::new(format!(
                    "Corrupt time index found, time index file ({}) has non-zero size but the last \
                     timestamp is {last_timestamp} which is less than the first timestamp \
                     {first_timestamp}",
                    file.absolute
                )));
            }
            if last_offset < index.base_offset {
                return Err(Problem::new(format!(
                    "Corrupt time index found, time index file ({}) has non-zero size but the last \
                     offset is {last_offset} which is less than the first offset {}",
                    file.absolute, index.base_offset
                )));
            }
        }
        if !index.len.is_multiple_of(TIME_ENTRY_BYTES) {
            return Err(Problem::new(format!(
                "Time index file {} is corrupt, found {} bytes which is neither positive nor a \
                 multiple of {TIME_ENTRY_BYTES}",
                file.absolute, index.len
            )));
        }
        Ok(())
    }

    /// Checks one time index entry against the log, as Kafka's `dumpTimeIndex` does.
    fn check_time_entry(
        &mut self,
        file: &JavaFile,
        probe: &LogProbe,
        start: u64,
        timestamp: i64,
        offset: i64,
        previous_timestamp: i64,
    ) -> std::result::Result<(), String> {
        if start > probe.len {
            return Err(format!("Slice from position {start} exceeds the end of the log"));
        }
        let mut position = start;
        let found = loop {
            match probe.entry_at(position, probe.len)? {
                None => break None,
                Some(entry) if entry.last_offset >= offset => break Some((position, entry)),
                Some(entry) => position += entry.size_bytes,
            }
        };
        let errors = &mut self.time_index_errors;
        match found {
            None => errors.shallow_offset_not_found.push(&file.absolute, (offset, -1)),
            Some((_, entry)) if entry.last_offset != offset => {
                errors.shallow_offset_not_found.push(&file.absolute, (offset, entry.last_offset));
            }
            Some((position, entry)) => {
                if entry.size_bytes > self.options.batch_bytes_max as u64 {
                    return Err(format!(
                        "batch of {} bytes at log position {position} is larger than the {} bytes \
                         read at once (raise --max-message-size)",
                        entry.size_bytes, self.options.batch_bytes_max
                    ));
                }
                let bytes = probe.read(position, entry.size_bytes)?;
                let log_entry = Entry::new(&bytes)?;
                let mut max_timestamp = -1i64;
                entry_records(&log_entry, self.options.limits, &mut |dump| {
                    max_timestamp = max_timestamp.max(dump.record.timestamp);
                    Ok(())
                })
                .map_err(|stop| match stop {
                    Stop::Problem(problem) => {
                        format!("log position {position}: {}", problem.message)
                    }
                    Stop::Output(error) => error.to_string(),
                })?;
                if max_timestamp != timestamp {
                    errors.mismatches.push(&file.absolute, (timestamp, max_timestamp));
                }
                if previous_timestamp >= timestamp {
                    errors.out_of_order.push(&file.absolute, (timestamp, previous_timestamp));
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// .txnindex and .snapshot
// ---------------------------------------------------------------------------------------------

impl Dumper<'_> {
    fn dump_txn_index(&mut self, file: &JavaFile) -> Step {
        // Kafka's `offsetFromFile` parses the name first.
        file.base_offset()?;
        // A missing transaction index has no entries (Kafka opens it only if it exists).
        let handle = match StdFs.open(&file.path, OpenMode::Read) {
            Ok(handle) => handle,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(Problem::io(file, &error).into()),
        };
        let len = handle.len().map_err(|error| Problem::io(file, &error))?;
        let mut position = 0u64;
        let mut bytes = [0u8; TXN_ENTRY_BYTES];
        while len - position >= TXN_ENTRY_BYTES as u64 {
            handle
                .read_exact_at(&mut bytes, position)
                .map_err(|error| Problem::io(file, &error))?;
            // Kafka reads the version as one byte.
            let version = bytes[0] as i8;
            if version > 0 {
                return Err(Problem::at(
                    position,
                    format!(
                        "Unexpected aborted transaction version {version} in transaction index {}, \
                         current version is 0",
                        file.absolute
                    ),
                )
                .into());
            }
            let mut current = bytes;
            current[0] = 0;
            let txn = AbortedTxn::decode(&current)
                .map_err(|error| Problem::at(position, error.to_string()))?;
            writeln!(
                self.out,
                "version: {version} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
            )?;
            position += TXN_ENTRY_BYTES as u64;
        }
        Ok(())
    }

    fn dump_producer_snapshot(&mut self, file: &JavaFile) -> Step {
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
    pub(super) fn line(format: super::Format, entry: &ProducerSnapshotEntry) -> String {
        let current_txn_first_offset =
            (entry.current_txn_first_offset >= 0).then_some(entry.current_txn_first_offset);
        // Java's `OptionalLong` since 3.5 (the Java `ProducerStateEntry`), Scala's `Option`
        // before.
        let current_txn_first_offset = if format.since(3, 5) {
            super::optional_long(current_txn_first_offset)
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

/// `--offsets-decoder` (`__consumer_offsets`, Kafka's `OffsetsMessageParser` with
/// `GroupCoordinatorRecordSerde`) and `--transaction-log-decoder` (`__transaction_state`, Kafka's
/// `TransactionLog.formatRecordKeyAndValue`). The record layouts are those of the schemas in
/// Kafka's `group-coordinator`, `clients` and `transaction-coordinator` modules.
mod coordinator {
    use seglog_format::Record;
    use seglog_format::schema::group_messages::{
        CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, schemas,
    };
    use seglog_format::schema::message::{Reader, Value, read, read_versioned, to_json};
    use seglog_format::schema::transaction::{
        self, TransactionLogKey, TransactionState, is_missing_version,
    };
    use seglog_format::{DecodeError, Result};

    enum OffsetsError {
        UnknownType(i16),
        Other(String),
    }

    /// Kafka's `OffsetsMessageParser.parse`: the key and payload texts of a
    /// `__consumer_offsets` record. `Err` is where Kafka throws (a record without a key).
    pub(super) fn offsets_key_value(
        record: &Record<'_>,
    ) -> std::result::Result<(Option<String>, Option<String>), String> {
        let Some(key) = record.key else {
            return Err(format!(
                "Failed to decode message at offset {} using offset topic decoder (message had a missing key)",
                record.offset
            ));
        };
        Ok(match offsets_json(key, record.value) {
            Ok((key, value)) => (Some(key), Some(value)),
            Err(OffsetsError::UnknownType(record_type)) => (
                Some(format!(
                    "Unknown record type {record_type} at offset {}, skipping.",
                    record.offset
                )),
                None,
            ),
            Err(OffsetsError::Other(message)) => {
                (Some(format!("Error at offset {}, skipping. {message}", record.offset)), None)
            }
        })
    }

    /// Kafka's texts for a key or value that did not read: `what` is `key` or `value`.
    fn read_error(what: &str, version: Option<i16>, error: &DecodeError) -> OffsetsError {
        OffsetsError::Other(match version {
            None => format!("Could not read version from {what}'s buffer."),
            Some(version) => format!(
                "Could not read record with version {version} from {what}'s buffer due to: {error}."
            ),
        })
    }

    fn offsets_json(
        key: &[u8],
        value: Option<&[u8]>,
    ) -> std::result::Result<(String, String), OffsetsError> {
        let mut key_reader = Reader::new(key);
        let record_type = key_reader.version().map_err(|error| read_error("key", None, &error))?;
        let (key_schema, value_schema) =
            schemas(record_type).ok_or(OffsetsError::UnknownType(record_type))?;
        let key_data = read(key_schema, &mut key_reader, record_type)
            .map_err(|error| read_error("key", Some(record_type), &error))?;
        let value_text = match value {
            None => "<DELETE>".to_owned(),
            Some(value) => {
                let mut value_reader = Reader::new(value);
                let version =
                    value_reader.version().map_err(|error| read_error("value", None, &error))?;
                let mut data = read(value_schema, &mut value_reader, version)
                    .map_err(|error| read_error("value", Some(version), &error))?;
                if record_type == 2 {
                    expand_consumer_protocol(&mut data);
                }
                format!("{{\"version\":\"{version}\",\"data\":{}}}", to_json(&data))
            }
        };
        let key_text = format!("{{\"type\":\"{record_type}\",\"data\":{}}}", to_json(&key_data));
        Ok((key_text, value_text))
    }

    /// For groups of protocol type `consumer`, Kafka shows each member's subscription and
    /// assignment decoded (keeping the bytes when they do not decode).
    fn expand_consumer_protocol(data: &mut Value) {
        if data.get("protocolType").and_then(Value::as_str) != Some("consumer") {
            return;
        }
        let Some(Value::Array(members)) = data.get_mut("members") else { return };
        for member in members {
            for (name, schema) in [
                ("subscription", &CONSUMER_PROTOCOL_SUBSCRIPTION),
                ("assignment", &CONSUMER_PROTOCOL_ASSIGNMENT),
            ] {
                let Some(slot) = member.get_mut(name) else { continue };
                let Value::Bytes(bytes) = slot else { continue };
                if let Ok((_, decoded)) = read_versioned(schema, bytes) {
                    *slot = decoded;
                }
            }
        }
    }

    /// Java's texts for a transaction log key or value that did not read.
    fn transaction_error(error: &DecodeError) -> String {
        match error {
            error if is_missing_version(error) => "java.nio.BufferUnderflowException".to_owned(),
            DecodeError::UnsupportedVersion { version, .. } => {
                format!("Unknown version {version} from the transaction log message value")
            }
            error => error.to_string(),
        }
    }

    /// Kafka's `TransactionLog.formatRecordKeyAndValue`. `Err` is where Kafka throws.
    pub(super) fn transaction_key_value(
        record: &Record<'_>,
    ) -> std::result::Result<(Option<String>, Option<String>), String> {
        let key = record.key.ok_or("java.lang.NullPointerException: the record has no key")?;
        let transactional_id = match transaction::decode_key(key) {
            Ok(TransactionLogKey::TransactionalId(id)) => id,
            Ok(TransactionLogKey::UnknownVersion(version)) => {
                return Ok((Some(format!("unknown::version={version}")), None));
            }
            Err(error) => return Err(transaction_error(&error)),
        };
        let key_text = format!("transaction_metadata::transactionalId={transactional_id}");
        let Some(value) = record.value else {
            return Ok((Some(key_text), Some("<DELETE>".to_owned())));
        };
        let value_text = transaction_value_text(value).map_err(|error| match error {
            Ok(message) => message,
            Err(error) => transaction_error(&error),
        })?;
        Ok((Some(key_text), Some(value_text)))
    }

    /// `TransactionMetadata`'s text; `Err(Ok(..))` is a Java exception's text.
    fn transaction_value_text(
        value: &[u8],
    ) -> std::result::Result<String, Result<String, DecodeError>> {
        let data = transaction::decode_value(value).map_err(Err)?;
        let status = data.transaction_status;
        let state = TransactionState::from_id(status).ok_or_else(|| {
            Ok(format!("Unknown transaction state id {status} from the transaction status message"))
        })?;
        let mut groups = Vec::new();
        if state != TransactionState::Empty {
            let Some(topics) = &data.transaction_partitions else {
                return Err(Ok(
                    "java.lang.NullPointerException: null transaction partitions".to_owned()
                ));
            };
            for topic in topics {
                groups.push(
                    topic.partition_ids.iter().map(|id| (topic.topic.clone(), *id)).collect(),
                );
            }
        }
        let partitions: Vec<String> = scala_hash_set_order(&groups)
            .into_iter()
            .map(|(topic, partition)| format!("{topic}-{partition}"))
            .collect();
        Ok(format!(
            "producerId:{},producerEpoch:{},state={},partitions=[{}],txnLastUpdateTimestamp={},txnTimeoutMs={}",
            data.producer_id,
            data.producer_epoch,
            state.name(),
            partitions.join(","),
            data.transaction_last_update_timestamp_ms,
            data.transaction_timeout_ms,
        ))
    }

    /// Java's `TopicPartition.hashCode`.
    pub(super) fn topic_partition_hash(topic: &str, partition: i32) -> i32 {
        31i32
            .wrapping_mul(31i32.wrapping_add(partition))
            .wrapping_add(seglog_format::java::string_hash(topic))
    }

    /// Scala 2.13's `tableSizeFor`.
    fn table_size_for(capacity: usize) -> usize {
        let capacity = capacity.saturating_sub(1).max(4);
        let highest_one_bit = 1usize << (usize::BITS - 1 - capacity.leading_zeros());
        (highest_one_bit * 2).min(1 << 30)
    }

    /// The iteration order of a Scala 2.13 `mutable.HashSet[TopicPartition]` filled by one
    /// `++=` of an immutable set per group (Kafka's `TransactionMetadata.addPartitions`).
    fn scala_hash_set_order(groups: &[Vec<(String, i32)>]) -> Vec<(String, i32)> {
        let mut table_len = super::SCALA_TABLE_LEN_INITIAL;
        let mut nodes: Vec<(i32, usize, (String, i32))> = Vec::new();
        for group in groups {
            let mut distinct: Vec<&(String, i32)> = Vec::new();
            for item in group {
                if !distinct.contains(&item) {
                    distinct.push(item);
                }
            }
            // `addAll` first calls `sizeHint(xs.knownSize)`: a table for `(n + 1) / 0.75`
            // entries. Sets of up to four elements are then added one by one through `add`
            // (which grows a 75 % full table); larger (hash) sets go straight to `addElem`.
            let n = distinct.len();
            table_len = table_len.max(table_size_for((n + 1) * 4 / 3));
            for item in distinct {
                if n <= 4 && nodes.len() + 1 >= super::scala_threshold(table_len) {
                    table_len *= 2;
                }
                if nodes.iter().all(|(_, _, existing)| existing != item) {
                    let hash = super::scala_improve_hash(topic_partition_hash(&item.0, item.1));
                    nodes.push((hash, nodes.len(), item.clone()));
                }
            }
        }
        nodes.sort_by_key(|(hash, idx, _)| (super::scala_bucket(*hash, table_len), *hash, *idx));
        nodes.into_iter().map(|(_, _, item)| item).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_names_and_paths() {
        assert_eq!(normalize_java_path("a//b///c/"), "a/b/c");
        assert_eq!(normalize_java_path("/"), "/");
        assert_eq!(normalize_java_path(""), "");
        let file = JavaFile::new("dir//00000000000000000042.index", "/srv/app");
        assert_eq!(file.shown, "dir/00000000000000000042.index");
        assert_eq!(file.name, "00000000000000000042.index");
        assert_eq!(file.absolute, "/srv/app/dir/00000000000000000042.index");
        assert_eq!(file.base_offset().unwrap(), 42);
        assert_eq!(file.sibling(".log").absolute, "/srv/app/dir/00000000000000000042.log");
        assert!(JavaFile::new("x.log", "/").base_offset().is_err());
        assert_eq!(JavaFile::new("/abs/1.log", "/srv/app").absolute, "/abs/1.log");
        assert_eq!(
            parse_snapshot_name("00000000000000000100-0000000003.checkpoint"),
            Some((100, 3))
        );
        assert_eq!(parse_snapshot_name("bootstrap.checkpoint"), None);
    }

    #[test]
    fn topic_partition_hash_matches_java() {
        // `TopicPartition.hashCode` = 31 * (31 + partition) + topic.hashCode(); "abc".hashCode()
        // is 96354, and "polygenelubricants".hashCode() is Integer.MIN_VALUE.
        assert_eq!(coordinator::topic_partition_hash("abc", 0), 961 + 96_354);
        assert_eq!(coordinator::topic_partition_hash("abc", 2), 31 * 33 + 96_354);
        assert_eq!(
            coordinator::topic_partition_hash("polygenelubricants", 0),
            i32::MIN.wrapping_add(961)
        );
    }

    #[test]
    fn report_map_grows_like_scala() {
        let mut every = ReportMap::new(PutPolicy::EveryPair);
        let mut first = ReportMap::new(PutPolicy::FirstPair);
        for idx in 0..11 {
            every.push(&format!("/f{idx}"), (idx, idx));
            first.push(&format!("/f{idx}"), (idx, idx));
        }
        assert_eq!((every.table_len, first.table_len), (16, 16));
        // Scala checks the load before looking the key up: an update of the 11th entry grows.
        every.push("/f0", (1, 2));
        first.push("/f0", (1, 2));
        assert_eq!((every.table_len, first.table_len), (32, 16));
        first.push("/f11", (0, 0));
        assert_eq!(first.table_len, 32);
        // Iteration is by bucket, then hash: a key in a lower bucket comes first.
        let mut map = ReportMap::new(PutPolicy::EveryPair);
        for key in ["b", "a"] {
            map.push(key, (0, 0));
        }
        let order: Vec<&str> = map.in_scala_order().map(|(key, _)| key.as_str()).collect();
        // "a".hashCode() = 97 (bucket 1), "b" = 98 (bucket 2).
        assert_eq!(order, ["a", "b"]);
    }

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

    fn record<'a>(key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Record<'a> {
        Record {
            offset: 5,
            timestamp: 0,
            timestamp_type: TimestampType::CreateTime,
            key,
            value,
            headers: seglog_format::Headers::default(),
            sequence: -1,
            size_bytes: 0,
        }
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

    #[test]
    fn decoders_and_class_names() {
        assert_eq!(DecoderKind::Hex.decode(&[0, 0xAB]).unwrap(), "00ab");
        assert_eq!(DecoderKind::Long.decode(&(-7i64).to_be_bytes()).unwrap(), "-7");
        assert_eq!(DecoderKind::Integer.decode(&[0, 0, 1, 0, 9]).unwrap(), "256");
        assert!(DecoderKind::Long.decode(&[1, 2]).is_err());
        assert_eq!(DecoderKind::String.decode(b"a\xFFb").unwrap(), "a\u{fffd}b");
        assert_eq!(
            DecoderKind::from_class("org.apache.kafka.tools.api.LongDecoder"),
            Some((DecoderKind::Long, false))
        );
        assert_eq!(
            DecoderKind::from_class("kafka.serializer.StringDecoder"),
            Some((DecoderKind::String, true))
        );
        assert_eq!(DecoderKind::from_class("com.example.MyDecoder"), None);
    }

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

    #[test]
    fn offsets_decoder_edge_cases() {
        let key = [0u8, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 0];
        let value = [0u8, 5, 0, 0];
        let (key_text, payload) =
            coordinator::offsets_key_value(&record(Some(&key), Some(&value))).unwrap();
        assert_eq!(
            key_text.unwrap(),
            "Error at offset 5, skipping. Could not read record with version 5 from value's \
             buffer due to: Can't read version 5 of OffsetCommitValue."
        );
        assert_eq!(payload, None);
        let (key_text, _) =
            coordinator::offsets_key_value(&record(Some(&[0, 1, 0]), None)).unwrap();
        assert_eq!(
            key_text.unwrap(),
            "Error at offset 5, skipping. Could not read record with version 1 from key's buffer \
             due to: null."
        );
        assert!(coordinator::offsets_key_value(&record(None, Some(&value))).is_err());
        // A group of another protocol type keeps its member bytes as base64.
        let mut group = vec![0u8, 2, 0, 1, b'g'];
        let mut value = vec![0u8, 0];
        for text in ["connect", "1", "l"] {
            value.extend_from_slice(&(text.len() as i16).to_be_bytes());
            value.extend_from_slice(text.as_bytes());
        }
        value.splice(11..11, 7i32.to_be_bytes());
        value.extend_from_slice(&1i32.to_be_bytes());
        for text in ["m", "c", "h"] {
            value.extend_from_slice(&(text.len() as i16).to_be_bytes());
            value.extend_from_slice(text.as_bytes());
        }
        value.extend_from_slice(&10i32.to_be_bytes());
        value.extend_from_slice(&1i32.to_be_bytes());
        value.push(0xAB);
        value.extend_from_slice(&0i32.to_be_bytes());
        group.truncate(5);
        let (key_text, payload) =
            coordinator::offsets_key_value(&record(Some(&group), Some(&value))).unwrap();
        assert_eq!(key_text.unwrap(), "{\"type\":\"2\",\"data\":{\"group\":\"g\"}}");
        assert_eq!(
            payload.unwrap(),
            "{\"version\":\"0\",\"data\":{\"protocolType\":\"connect\",\"generation\":7,\
             \"protocol\":\"1\",\"leader\":\"l\",\"members\":[{\"memberId\":\"m\",\"clientId\":\"c\",\
             \"clientHost\":\"h\",\"sessionTimeout\":10,\"subscription\":\"qw==\",\
             \"assignment\":\"\"}]}}"
        );
    }

    #[test]
    fn transaction_partitions_in_scala_set_order() {
        // Worked by hand: "foo".hashCode() = 101574, TopicPartition hash = 31 * (31 + p) +
        // 101574, improved by `h ^ (h >>> 16)`, buckets of 16: p=2 -> 4, p=0 -> 6, p=1 -> 7.
        let mut value = 0i16.to_be_bytes().to_vec();
        value.extend_from_slice(&1i64.to_be_bytes());
        value.extend_from_slice(&0i16.to_be_bytes());
        value.extend_from_slice(&100i32.to_be_bytes());
        value.push(2);
        value.extend_from_slice(&1i32.to_be_bytes());
        value.extend_from_slice(&3i16.to_be_bytes());
        value.extend_from_slice(b"foo");
        value.extend_from_slice(&3i32.to_be_bytes());
        for partition in [0i32, 1, 2] {
            value.extend_from_slice(&partition.to_be_bytes());
        }
        value.extend_from_slice(&5i64.to_be_bytes());
        value.extend_from_slice(&4i64.to_be_bytes());
        let key = [0u8, 0, 0, 1, b't'];
        let (key_text, payload) =
            coordinator::transaction_key_value(&record(Some(&key), Some(&value))).unwrap();
        assert_eq!(key_text.unwrap(), "transaction_metadata::transactionalId=t");
        assert_eq!(
            payload.unwrap(),
            "producerId:1,producerEpoch:0,state=PrepareCommit,partitions=[foo-2,foo-0,foo-1],\
             txnLastUpdateTimestamp=5,txnTimeoutMs=100"
        );
        let (unknown, none) =
            coordinator::transaction_key_value(&record(Some(&[0, 3]), None)).unwrap();
        assert_eq!((unknown.as_deref(), none), (Some("unknown::version=3"), None));
        let mut bad_state = value.clone();
        bad_state[16] = 9;
        assert_eq!(
            coordinator::transaction_key_value(&record(Some(&key), Some(&bad_state))).unwrap_err(),
            "Unknown transaction state id 9 from the transaction status message"
        );
    }

    #[test]
    fn flexible_tagged_fields() {
        // TransactionLogValue v1: tagged previousProducerId (tag 0) shows only when not -1.
        let mut value = 1i16.to_be_bytes().to_vec();
        value.extend_from_slice(&1i64.to_be_bytes());
        value.extend_from_slice(&0i16.to_be_bytes());
        value.extend_from_slice(&100i32.to_be_bytes());
        value.push(0);
        value.push(0);
        value.extend_from_slice(&5i64.to_be_bytes());
        value.extend_from_slice(&4i64.to_be_bytes());
        value.extend_from_slice(&[1, 0, 8]);
        value.extend_from_slice(&77i64.to_be_bytes());
        let key = [0u8, 0, 0, 1, b't'];
        let (_, payload) =
            coordinator::transaction_key_value(&record(Some(&key), Some(&value))).unwrap();
        assert_eq!(
            payload.unwrap(),
            "producerId:1,producerEpoch:0,state=Empty,partitions=[],txnLastUpdateTimestamp=5,\
             txnTimeoutMs=100"
        );
    }

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
