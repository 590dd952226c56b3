//! `seglog format` (Kafka's `kafka-storage.sh format`), `seglog cluster status` (Kafka's
//! `kafka-metadata-quorum.sh describe`) and `serve`'s KRaft controller role.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seglog_broker::cluster::controller_process::ControllerProcess;
use seglog_broker::cluster::kraft_config::{KraftConfig, ProcessRole};
use seglog_broker::cluster::raft::network::fetch_status;
use seglog_storage::config::parse_properties;
use seglog_storage::dirs::meta::MetaProperties;
use seglog_storage::io::StdFs;

/// Arguments of `seglog format`.
#[derive(Debug, clap::Args)]
pub(crate) struct FormatArgs {
    /// The node's `server.properties` (its `node.id`, `log.dirs`, `metadata.log.dir`).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: PathBuf,
    /// The cluster id, a Kafka Uuid (22 base64url characters); `seglog format --random-uuid`
    /// prints a new one.
    #[arg(
        long,
        short = 't',
        value_name = "ID",
        required_unless_present = "random_uuid",
        allow_hyphen_values = true
    )]
    cluster_id: Option<String>,
    /// Prints a new random Uuid and exits (Kafka's `kafka-storage.sh random-uuid`).
    #[arg(long)]
    random_uuid: bool,
    /// Leaves already formatted directories as they are instead of failing.
    #[arg(long, short = 'g')]
    ignore_formatted: bool,
}

/// A random Kafka Uuid in its text form, drawn again while the text starts with `-` (as
/// Kafka's `Uuid.randomUuid` does: such an id reads as an option on a command line).
fn random_uuid() -> Result<String> {
    loop {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
        let text = seglog_format::java::uuid_to_base64(&bytes);
        if !text.starts_with('-') {
            return Ok(text);
        }
    }
}

fn read_properties(path: &PathBuf) -> Result<BTreeMap<String, String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_properties(&text).with_context(|| format!("in {}", path.display()))
}

/// `seglog format`: writes `meta.properties` (version 1: `cluster.id`, `node.id`, a new
/// `directory.id`) into the metadata log directory and every log directory.
pub(crate) fn run_format(args: &FormatArgs) -> Result<()> {
    if args.random_uuid {
        println!("{}", random_uuid()?);
        return Ok(());
    }
    let cluster_id = args.cluster_id.clone().unwrap_or_default();
    seglog_format::java::uuid_from_base64(&cluster_id).map_err(|reason| {
        anyhow::anyhow!(
            "Cluster ID string {cluster_id} does not appear to be a valid UUID: {reason}"
        )
    })?;
    let properties = read_properties(&args.config)?;
    let node_id: i32 = properties
        .get("node.id")
        .context("Missing required configuration \"node.id\" which has no default value.")?
        .trim()
        .parse()
        .context("node.id is not a number")?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for key in ["metadata.log.dir", "log.dirs", "log.dir"] {
        for dir in properties.get(key).map(String::as_str).unwrap_or_default().split(',') {
            let dir = PathBuf::from(dir.trim());
            if !dir.as_os_str().is_empty() && !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    if dirs.is_empty() {
        dirs.push(PathBuf::from("./seglog-data"));
    }
    for dir in &dirs {
        if MetaProperties::read(&StdFs, dir).ok().flatten().is_some() {
            if args.ignore_formatted {
                continue;
            }
            bail!(
                "Log directory {} is already formatted. Use --ignore-formatted to ignore this directory and format the others.",
                dir.display()
            );
        }
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let meta = MetaProperties {
            version: 1,
            node_id: Some(node_id),
            cluster_id: Some(cluster_id.clone()),
            directory_id: Some(random_uuid()?),
            other: BTreeMap::new(),
        };
        meta.write(&StdFs, dir).with_context(|| format!("cannot format {}", dir.display()))?;
        println!("Formatting {} with metadata.version 3.6-IV2.", dir.display());
    }
    Ok(())
}

/// Arguments of `seglog cluster`.
#[derive(Debug, clap::Args)]
pub(crate) struct ClusterArgs {
    #[command(subcommand)]
    command: ClusterCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ClusterCommand {
    /// Shows the metadata quorum as a controller sees it: its leader and term, the voters, the
    /// log, and the registered brokers.
    ///
    /// Example: seglog cluster status --controller 127.0.0.1:9093
    Status {
        /// A controller's listener, `host:port`.
        #[arg(long, value_name = "ADDR")]
        controller: String,
    },
}

/// `seglog cluster ...`.
pub(crate) fn run_cluster(args: &ClusterArgs) -> Result<()> {
    let ClusterCommand::Status { controller } = &args.command;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let status = runtime
        .block_on(fetch_status(controller, Duration::from_secs(5)))
        .with_context(|| format!("cannot reach the controller at {controller}"))?;
    let ids = |ids: &[u64]| ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
    println!("NodeId:           {}", status.node_id);
    println!(
        "LeaderId:         {}",
        status.leader.map_or_else(|| "none".to_owned(), |l| l.to_string())
    );
    println!("LeaderEpoch:      {}", status.term);
    println!("CurrentVoters:    [{}]", ids(&status.voters));
    println!("CurrentObservers: [{}]", ids(&status.learners));
    let index = |i: Option<u64>| i.map_or_else(|| "-1".to_owned(), |i| i.to_string());
    println!("LastLogIndex:     {}", index(status.last_log_index));
    println!("AppliedIndex:     {}", index(status.applied_index));
    println!(
        "MetadataVersion:  {}",
        status.metadata_version.map_or_else(|| "none".to_owned(), |v| v.to_string())
    );
    println!("Topics:           {}", status.topics);
    for (id, epoch, fenced) in &status.brokers {
        println!("Broker:           {id} epoch {epoch}{}", if *fenced { " fenced" } else { "" });
    }
    Ok(())
}

/// `serve` with `process.roles` set: today the controller role alone.
pub(crate) fn run_kraft(config: KraftConfig) -> Result<()> {
    if config.roles.contains(&ProcessRole::Broker) {
        bail!(
            "process.roles includes 'broker': seglog's brokers do not join a cluster yet (issue 21). \
             Run the quorum with process.roles=controller, or leave process.roles unset for a single node."
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("seglog-controller")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let signals = crate::serve::Signals::install()?;
        let process = ControllerProcess::start(&config, Arc::new(StdFs))
            .await
            .context("cannot start the controller")?;
        eprintln!(
            "seglog: controller {} of cluster {} answering the quorum on {}",
            config.node_id,
            process.cluster_id(),
            process.node().addr()
        );
        signals.wait().await;
        eprintln!("seglog: shutting down");
        process.shutdown().await;
        eprintln!("seglog: stopped");
        Ok(())
    })
}
