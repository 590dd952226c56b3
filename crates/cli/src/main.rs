//! The `seglog` command line. Today: `inspect`, a read-only check of Kafka log directories,
//! partitions and segment files with every batch validated. `dump`, `verify`, `produce`,
//! `consume`, `bench` and `serve` arrive with the storage and broker layers.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod inspect;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// seglog: Apache Kafka's log storage engine, byte-compatible with Kafka on disk.
#[derive(Debug, Parser)]
#[command(version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Walks a Kafka log directory, partition directory or `.log` file and validates every batch.
    ///
    /// With no path, inspects `./seglog-data`; if that directory does not exist yet, a sample
    /// partition (one batch per codec) is written there first, so there is something to see.
    ///
    /// Examples:
    ///   seglog inspect
    ///   seglog inspect /var/lib/kafka/data
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
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect { path, decompressed_mib_max } => {
            inspect::run(path, decompressed_mib_max.saturating_mul(1024 * 1024))
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("seglog: {error:#}");
            ExitCode::FAILURE
        }
    }
}
