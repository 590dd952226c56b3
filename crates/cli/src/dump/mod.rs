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
//! The submodules follow the files dumped: `log` (and `records`, `decoders` for what is inside
//! a batch), `index`, `snapshot`; `report` holds what is printed after all files.
//!
//! A `.log` is walked with storage's `HeaderScan` (Kafka's framing, a 16 KiB window), one batch
//! at a time, so memory stays flat whatever the file's size; indexes are read slot by slot
//! through storage's `IndexSlots` and searched with its warm-section search. A single batch larger than `max(--max-message-size, 64 MiB)` is not
//! read: it and what follows are reported as invalid bytes.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use seglog_format::batch::RECORD_BATCH_OVERHEAD;
use seglog_format::compression::DECOMPRESSED_BYTES_MAX_DEFAULT;
use seglog_format::{Compression, ControlRecordType, DecodeLimits};

mod decoders;
mod index;
mod log;
mod records;
mod report;
mod snapshot;

use report::{PutPolicy, ReportMap, TimeIndexErrors};

/// Kafka's `--max-message-size` default (5 MiB).
const MAX_MESSAGE_SIZE_DEFAULT: i32 = 5 * 1024 * 1024;
/// Kafka's `--max-bytes` default: no limit.
const MAX_BYTES_DEFAULT: i32 = i32::MAX;
/// A batch up to this size is always read, whatever `--max-message-size` says.
const BATCH_BYTES_MAX_FLOOR: usize = 64 * 1024 * 1024;
/// Files larger than this get a progress bar (when stderr is a terminal).
const PROGRESS_BYTES_MIN: u64 = 64 * 1024 * 1024;
/// Kafka's default key and value decoder.
const STRING_DECODER_CLASS: &str = "org.apache.kafka.tools.api.StringDecoder";

const _: () = assert!(BATCH_BYTES_MAX_FLOOR >= RECORD_BATCH_OVERHEAD);

/// Arguments of `seglog dump` (Kafka's DumpLogSegments options).
///
/// Prints the contents of Kafka segment files exactly as Kafka's `kafka-dump-log.sh` (3.3+)
/// does: `.log` (and KRaft `.checkpoint`), `.index`, `.timeindex`, `.txnindex` and producer
/// `.snapshot` files.
///
/// Examples:
///   seglog dump --files 00000000000000000000.log --print-data-log
///   seglog dump --files 00000000000000000000.index,00000000000000000000.timeindex
///   seglog dump --files s3://bucket/seglog/orders-0-<topic id>/segments/<object>.log
///     (a tiered segment's object, read from the bucket; --endpoint etc. as for the broker)
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
#[expect(clippy::struct_excessive_bools, reason = "one flag per Kafka option")]
pub(crate) struct DumpArgs {
    /// REQUIRED: the comma separated list of data and index log files to be dumped.
    #[arg(long, value_name = "file1,file2,...", value_delimiter = ',')]
    files: Vec<String>,
    /// Where `s3://` objects are read from (the bucket comes from the URL).
    #[command(flatten)]
    bucket: crate::remote::RemoteArgs,
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
    /// Parse records as KRaft cluster metadata (`__cluster_metadata`: JSON, as Kafka prints it).
    #[arg(long)]
    cluster_metadata_decoder: bool,
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
    /// `__cluster_metadata` records as JSON.
    ClusterMetadata,
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
        if args.cluster_metadata_decoder {
            needs("--cluster-metadata-decoder", 3, 0)?;
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
        } else if args.cluster_metadata_decoder {
            notices.clear();
            Parser::ClusterMetadata
        } else {
            Parser::Decoders { key, value }
        };
        let print_data_log = args.print_data_log
            || args.offsets_decoder
            || args.transaction_log_decoder
            || args.cluster_metadata_decoder
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
    /// Files downloaded from `s3://` URLs, shown by their URL.
    urls: BTreeMap<String, String>,
}

/// Downloads the `s3://` objects among `files` into `dir`, each under its Kafka file name
/// (`<base offset>.<kind>`, so that it is dumped as the local file it was): the local paths in
/// `files`' order and the URL each downloaded path stands for.
fn download_urls(
    files: &[&str],
    args: &crate::remote::RemoteArgs,
    dir: &std::path::Path,
) -> Result<(Vec<String>, BTreeMap<String, String>)> {
    let mut paths = Vec::new();
    let mut urls = BTreeMap::new();
    for file in files {
        if !file.starts_with("s3://") {
            paths.push((*file).to_owned());
            continue;
        }
        let name = file.rsplit('/').next().unwrap_or_default();
        // `<base offset, 20 digits>-<segment id, 32 hex digits>.<kind>`
        let kafka_name = match (name.get(..20), name.get(20..21), name.get(53..)) {
            (Some(base), Some("-"), Some(kind)) if kind.starts_with('.') => format!("{base}{kind}"),
            _ => anyhow::bail!("{file} is not a tiered segment's object"),
        };
        let bytes = crate::remote::read_url(file, args)?;
        let path = dir.join(kafka_name).to_string_lossy().into_owned();
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {path}"))?;
        urls.insert(path.clone(), (*file).to_owned());
        paths.push(path);
    }
    Ok((paths, urls))
}

/// Runs `seglog dump`; `Ok(false)` when problems were found (corrupt data, invalid batches,
/// trailing bytes, index mismatches, unreadable files).
pub(crate) fn run(args: &DumpArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<bool> {
    run_with(args, out, err, io::stderr().is_terminal())
}

fn run_with(
    args: &DumpArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
    show_progress: bool,
) -> Result<bool> {
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
    let downloads = tempfile::tempdir().context("cannot make a temporary directory")?;
    let (paths, urls) = download_urls(&files, &args.bucket, downloads.path())?;
    let files: Vec<&str> = paths.iter().map(String::as_str).collect();
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
        show_progress,
        urls,
    };
    match dumper.run(&files) {
        Ok(()) => {}
        // A closed pipe (`seglog dump ... | head`) ends the dump quietly.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => return Ok(!dumper.problems),
        Err(error) => return Err(error).context("cannot write the dump"),
    }
    Ok(!dumper.problems)
}

/// Lines `skip..skip + max` of what is written, then a [`io::ErrorKind::BrokenPipe`] that
/// ends the dump, as a closed pipe would.
struct PageWriter {
    skip: usize,
    max: usize,
    seen: usize,
    partial: Vec<u8>,
    page: seglog_broker::console::DumpPage,
}

impl Write for PageWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &byte in buf {
            if byte != b'\n' {
                if self.seen >= self.skip {
                    self.partial.push(byte);
                }
                continue;
            }
            if self.seen >= self.skip {
                if self.page.lines.len() == self.max {
                    self.page.more = true;
                    return Err(io::Error::from(io::ErrorKind::BrokenPipe));
                }
                let line = String::from_utf8_lossy(&self.partial).into_owned();
                self.page.lines.push(line);
                self.partial.clear();
            }
            self.seen += 1;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One page of `seglog dump --files <path>` for the broker's web console.
pub(crate) fn console_page(
    request: &seglog_broker::console::DumpRequest,
) -> std::result::Result<seglog_broker::console::DumpPage, String> {
    #[derive(clap::Parser)]
    struct Command {
        #[command(flatten)]
        args: DumpArgs,
    }
    let mut argv =
        vec!["dump".to_owned(), "--files".to_owned(), request.path.display().to_string()];
    if request.print_data_log {
        argv.push("--print-data-log".to_owned());
    }
    let command = <Command as clap::Parser>::try_parse_from(argv).map_err(|e| e.to_string())?;
    let mut out = PageWriter {
        skip: request.skip_lines,
        max: request.lines_max,
        seen: 0,
        partial: Vec::new(),
        page: seglog_broker::console::DumpPage::default(),
    };
    run_with(&command.args, &mut out, &mut io::sink(), false).map_err(|e| format!("{e:#}"))?;
    if !out.partial.is_empty() && out.page.lines.len() < out.max {
        out.page.lines.push(String::from_utf8_lossy(&out.partial).into_owned());
    }
    Ok(out.page)
}

impl Dumper<'_> {
    fn run(&mut self, files: &[&str]) -> io::Result<()> {
        for arg in files {
            let mut file = JavaFile::new(arg, &self.cwd);
            if let Some(url) = self.urls.get(*arg) {
                file.shown.clone_from(url);
            }
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
}

#[cfg(test)]
mod tests {
    use seglog_format::{Record, TimestampType};

    use super::log::parse_snapshot_name;
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

    pub(super) fn record<'a>(key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Record<'a> {
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
}
