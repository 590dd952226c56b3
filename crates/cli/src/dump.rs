//! `seglog dump`: Kafka's `kafka-dump-log.sh` output. Being written.

/// Arguments of `seglog dump` (Kafka's DumpLogSegments options).
#[derive(Debug, clap::Args)]
pub(crate) struct DumpArgs {
    /// Files to dump, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    files: Vec<std::path::PathBuf>,
}

/// Dumps the files; `Ok(false)` when problems were found.
pub(crate) fn run(
    args: &DumpArgs,
    _out: &mut dyn std::io::Write,
    _err: &mut dyn std::io::Write,
) -> anyhow::Result<bool> {
    anyhow::bail!("dump is not implemented yet ({} files)", args.files.len())
}
