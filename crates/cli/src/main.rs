//! The `seglog` command line: `produce`, `consume`, `topics`, `dump`, `verify`, `bench`, `serve` and `inspect` over
//! Kafka log directories. Exit codes: 0 success, 1 failure (or problems found), 2 usage.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod cluster;
mod common;
mod compact;
mod consume;
mod dev_certs;
mod dump;
mod inspect;
mod produce;
mod progress;
mod remote;
mod security;
mod serve;
mod topics;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc reserves huge allocations without committing them (MAP_NORESERVE), so a request
/// whose declared array count is far beyond its size (which the `kafka-protocol` decoder
/// preallocates) costs address space, not an abort: see ARCHITECTURE.md. A build without the
/// `mimalloc` feature exists for heap profiling only (docs/scale.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// seglog: Apache Kafka's log storage engine, byte-compatible with Kafka on disk.
#[derive(Debug, Parser)]
#[command(version, about, propagate_version = true, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const EXAMPLES: &str = "Examples:
  seq 1 100000 | seglog produce --topic demo
  seglog consume --topic demo --from ts:1700000000000 --format '%o %T %v\\n'
  seglog topics describe
  seglog dump --files seglog-data/demo-0/00000000000000000000.log --deep-iteration
  seglog verify --log-dir /var/lib/kafka/data
  seglog serve --config server.properties";

#[derive(Debug, Subcommand)]
enum Command {
    /// Appends lines (or length-delimited records) from stdin to a topic, creating it if needed.
    ///
    /// Example: seq 1 100000 | seglog produce --topic demo --compression lz4
    Produce(produce::ProduceArgs),
    /// Prints a topic's records in offset order per partition.
    ///
    /// Example: seglog consume --topic demo --from earliest --format '%p %o %k %v\n'
    Consume(consume::ConsumeArgs),
    /// Lists, describes, creates and deletes topics.
    ///
    /// Example: seglog topics create --topic orders --partitions 3 --config retention.ms=86400000
    Topics(topics::TopicsArgs),
    /// Prints segment, index and snapshot files exactly as Kafka's kafka-dump-log.sh does.
    ///
    /// Example: seglog dump --files 00000000000000000000.log --print-data-log
    Dump(dump::DumpArgs),
    /// Cleans a compacted topic's partitions now, as the log cleaner would, in a stopped broker's
    /// log directory (one written by Kafka too); prints bytes, records and keys before and after.
    ///
    /// Example: seglog compact --log-dir ./seglog-data --topic __consumer_offsets
    Compact(compact::CompactArgs),
    /// Checks every partition of a log directory; --repair fixes what recovery can.
    ///
    /// Example: seglog verify --log-dir /var/lib/kafka/data --repair
    Verify(verify::VerifyArgs),
    /// Measures append, read, tail-consume, lookups and restart, next to the commitlog crate and
    /// plain disk writes and reads in the same run; prints the ratios.
    ///
    /// Example: seglog bench --total-mib 1024 --record-bytes 100
    Bench(bench::BenchArgs),
    /// Serves the log directory to Kafka clients over Kafka's wire protocol, until SIGINT or
    /// SIGTERM (then flushes, checkpoints and stops cleanly).
    ///
    /// Example: seglog serve --listener 127.0.0.1:9092 --log-dir ./seglog-data
    Serve(serve::ServeArgs),
    /// Lists, adds and removes the ACLs of a stopped broker's log directory (kafka-acls.sh's
    /// role; the broker reads them at start and also serves CreateAcls/DeleteAcls).
    ///
    /// Example: seglog acls add --principal User:alice --operation Read --topic orders
    Acls(security::AclsArgs),
    /// Formats log directories for a KRaft node: `meta.properties` with the cluster id, the node
    /// id and a directory id (kafka-storage.sh format).
    ///
    /// Example: seglog format --config controller.properties --cluster-id "$(seglog format --random-uuid -c x)"
    Format(cluster::FormatArgs),
    /// Looks at a cluster's metadata quorum.
    ///
    /// Example: seglog cluster status --controller 127.0.0.1:9093
    Cluster(cluster::ClusterArgs),
    /// Lists, adds and removes the SCRAM users of a stopped broker's log directory.
    ///
    /// Example: seglog users add --user alice --password alice-secret
    Users(security::UsersArgs),
    /// Walks a log directory, partition directory or `.log` file and validates every batch.
    ///
    /// With no path, inspects `./seglog-data`; if that directory does not exist yet, a sample
    /// partition (one batch per codec) is written there first.
    ///
    /// Examples:
    ///   seglog inspect
    ///   seglog inspect /var/lib/kafka/data/orders-0/00000000000000368769.log
    #[command(verbatim_doc_comment)]
    Inspect {
        /// A log directory, a partition directory, or a segment `.log` file.
        path: Option<PathBuf>,
        /// Largest decompressed size accepted for one batch, in MiB.
        #[arg(long, default_value_t = 64)]
        decompressed_mib_max: usize,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Produce(args) => produce::run(&args).map(|()| true),
        Command::Consume(args) => consume::run(&args).map(|()| true),
        Command::Topics(args) => topics::run(&args).map(|()| true),
        Command::Dump(args) => {
            dump::run(&args, &mut std::io::stdout().lock(), &mut std::io::stderr().lock())
        }
        Command::Verify(args) => verify::run(&args),
        Command::Compact(args) => compact::run(&args).map(|()| true),
        Command::Bench(args) => bench::run(&args).map(|()| true),
        Command::Serve(args) => serve::run(&args).map(|()| true),
        Command::Acls(args) => security::run_acls(&args).map(|()| true),
        Command::Format(args) => cluster::run_format(&args).map(|()| true),
        Command::Cluster(args) => cluster::run_cluster(&args).map(|()| true),
        Command::Users(args) => security::run_users(&args).map(|()| true),
        Command::Inspect { path, decompressed_mib_max } => {
            inspect::run(path, decompressed_mib_max.saturating_mul(1024 * 1024))
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            // One line: the context chain joined, no backtrace.
            eprintln!("seglog: {error:#}");
            ExitCode::FAILURE
        }
    }
}
