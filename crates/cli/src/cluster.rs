//! `seglog format` (Kafka's `kafka-storage.sh format`), `seglog cluster status` (Kafka's
//! `kafka-metadata-quorum.sh describe`) and `serve`'s KRaft roles.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seglog_broker::cluster::controller_process::ControllerProcess;
use seglog_broker::cluster::kraft_config::{KraftConfig, ProcessRole};
use seglog_broker::cluster::link::{ClusterJoin, MetadataSource};
use seglog_broker::cluster::raft::network::fetch_status;
use seglog_broker::cluster::raft::transport::QuorumTransport;
use seglog_broker::{BrokerConfig, Server};
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

/// How long `cluster status` waits for the leader's view of the members' progress.
const LEADER_VIEW_TIMEOUT: Duration = Duration::from_millis(300);

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
        /// A properties file with the controller listener's security (Kafka's
        /// `--command-config`): a node's own configuration, or `security.protocol=SSL` with
        /// `ssl.keystore.location` and `ssl.truststore.location`.
        #[arg(long, value_name = "FILE")]
        command_config: Option<PathBuf>,
    },
    /// Removes a broker's registration from the cluster's metadata (Kafka's
    /// `kafka-cluster.sh unregister`), after it has stopped for good: it leaves every ISR it
    /// can and leads nothing, and no longer gets the metadata.
    ///
    /// Example: seglog cluster unregister --bootstrap-server 127.0.0.1:29092 --id 4
    Unregister {
        /// Any broker of the cluster, `host:port`.
        #[arg(long, value_name = "ADDR")]
        bootstrap_server: String,
        /// The broker's id.
        #[arg(long)]
        id: i32,
    },
}

/// `seglog cluster ...`.
pub(crate) fn run_cluster(args: &ClusterArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (controller, command_config) = match &args.command {
        ClusterCommand::Status { controller, command_config } => (controller, command_config),
        ClusterCommand::Unregister { bootstrap_server, id } => {
            return runtime.block_on(unregister(bootstrap_server, *id));
        }
    };
    let transport = match command_config {
        Some(path) => QuorumTransport::from_properties(&read_properties(path)?)
            .with_context(|| format!("in {}", path.display()))?,
        None => QuorumTransport::plaintext(),
    };
    let status = runtime
        .block_on(fetch_status(controller, Duration::from_secs(5), &transport))
        .with_context(|| format!("cannot reach the controller at {controller}"))?;
    // The members' progress is the leader's to know: asked of it when this voter follows.
    let leader_view = match status.leader {
        Some(leader) if leader != status.node_id => {
            // Briefly: a leader that is cut off or stopped must not hold up this node's view.
            status.addresses.iter().find(|(id, _)| *id == leader).and_then(|(_, addr)| {
                runtime.block_on(fetch_status(addr, LEADER_VIEW_TIMEOUT, &transport)).ok()
            })
        }
        _ => None,
    };
    let progress = leader_view.as_ref().unwrap_or(&status);
    let mut out = String::new();
    let ids = |ids: &[u64]| ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
    writeln!(out, "NodeId:           {}", status.node_id)?;
    writeln!(
        out,
        "LeaderId:         {}",
        status.leader.map_or_else(|| "none".to_owned(), |l| l.to_string())
    )?;
    writeln!(out, "LeaderEpoch:      {}", status.term)?;
    writeln!(out, "CurrentVoters:    [{}]", ids(&status.voters))?;
    writeln!(out, "CurrentObservers: [{}]", ids(&status.learners))?;
    let index = |i: Option<u64>| i.map_or_else(|| "-1".to_owned(), |i| i.to_string());
    writeln!(out, "LastLogIndex:     {}", index(status.last_log_index))?;
    writeln!(out, "AppliedIndex:     {}", index(status.applied_index))?;
    writeln!(
        out,
        "MetadataVersion:  {}",
        status.metadata_version.map_or_else(|| "none".to_owned(), |v| v.to_string())
    )?;
    writeln!(out, "Topics:           {}", status.topics)?;
    if progress.high_watermark >= 0 {
        writeln!(out, "HighWatermark:    {}", progress.high_watermark)?;
        for (id, end) in &progress.progress {
            let lag = if *end < 0 {
                "unknown".to_owned()
            } else {
                (progress.high_watermark - end).max(0).to_string()
            };
            writeln!(out, "Replica:          {id} log end {end} lag {lag}")?;
        }
    }
    for (id, epoch, fenced) in &status.brokers {
        writeln!(
            out,
            "Broker:           {id} epoch {epoch}{}",
            if *fenced { " fenced" } else { "" }
        )?;
    }
    writeln!(out, "UnderReplicated:  {}", status.under_replicated_count)?;
    let list = |ids: &[i32]| ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
    for (topic, partition, leader, replicas, isr, elr) in &status.under_replicated {
        writeln!(
            out,
            "Partition:        {topic}-{partition} leader {leader} replicas [{}] isr [{}] elr [{}]",
            list(replicas),
            list(isr),
            list(elr)
        )?;
    }
    // The followers of what this node's broker leads (each node answers for its own).
    writeln!(out, "Lagging:          {}", status.lagging_count)?;
    for (topic, partition, follower, behind) in &status.lagging {
        writeln!(out, "Lag:              {topic}-{partition} follower {follower} behind {behind}")?;
    }
    crate::common::print_to_stdout(&out)
}

/// `serve` with `process.roles` set: a controller, a broker, or both (Kafka's combined mode).
/// `properties` are the whole configuration; a broker's listeners are those not named in
/// `controller.listener.names`.
pub(crate) fn run_kraft(config: KraftConfig, properties: &BTreeMap<String, String>) -> Result<()> {
    let broker = if config.roles.contains(&ProcessRole::Broker) {
        Some(broker_config(properties)?)
    } else {
        None
    };
    let names: Vec<String> =
        broker.iter().flat_map(|broker| broker.listeners.iter().map(|l| l.name.clone())).collect();
    let (inter_broker_listener, inter_broker_security) = match &broker {
        Some(broker) => {
            let name =
                seglog_broker::cluster::kraft_config::inter_broker_listener(properties, &names)?;
            let security = seglog_broker::ClientSecurity::inter_broker(&broker.security, &name)?;
            (name, security)
        }
        None => (String::new(), seglog_broker::ClientSecurity::plaintext()),
    };
    let transport = QuorumTransport::from_properties(properties)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("seglog-node")
        .max_blocking_threads(crate::serve::BLOCKING_THREADS_MAX)
        .build()
        .context("cannot start the async runtime")?;
    let rack = properties.get("broker.rack").cloned().filter(|r| !r.is_empty());
    let heartbeat_ms: u64 = match properties.get("broker.heartbeat.interval.ms") {
        Some(value) => value.trim().parse().map_err(|_| {
            anyhow::anyhow!("Invalid value {value} for configuration broker.heartbeat.interval.ms")
        })?,
        None => 2_000,
    };
    runtime.block_on(async move {
        let mut signals = crate::serve::Signals::install()?;
        let controller = if config.roles.contains(&ProcessRole::Controller) {
            let process = ControllerProcess::start(&config, Arc::new(StdFs), &transport)
                .await
                .context("cannot start the controller")?;
            eprintln!(
                "seglog: controller {} of cluster {} answering the quorum on {}",
                config.node_id,
                process.cluster_id(),
                process.node().addr()
            );
            Some(process)
        } else {
            None
        };
        let server = match broker {
            Some(broker) => {
                let source = match &controller {
                    Some(process) => MetadataSource::Voter(process.node_handle()),
                    None => learner_source(&config, &broker, &transport).await?,
                };
                let join = ClusterJoin {
                    source,
                    voters: config.quorum_addresses(),
                    rack,
                    heartbeat_interval: Duration::from_millis(heartbeat_ms),
                    inter_broker_listener,
                    inter_broker_security,
                };
                let dump: seglog_broker::console::DumpFn = Arc::new(crate::dump::console_page);
                // The broker serves once the controller has unfenced it, which waits for the
                // quorum: a signal meanwhile stops the node.
                let server = tokio::select! {
                    started = Server::start_in_cluster(broker, Some(dump), join) => {
                        started.context("cannot start the broker")?
                    }
                    () = signals.wait() => {
                        eprintln!("seglog: stopped before the broker was unfenced");
                        if let Some(process) = controller {
                            process.shutdown().await;
                        }
                        return Ok(());
                    }
                };
                eprintln!(
                    "seglog: broker {} serving Kafka clients on {}",
                    config.node_id,
                    server.local_addr()
                );
                Some(server)
            }
            None => None,
        };
        signals.wait().await;
        eprintln!("seglog: shutting down");
        if let Some(server) = server {
            server.shutdown().await.context("shutdown failed")?;
        }
        if let Some(process) = controller {
            process.shutdown().await;
        }
        eprintln!("seglog: stopped");
        Ok(())
    })
}

/// The broker's configuration: the listeners without the controller's.
fn broker_config(properties: &BTreeMap<String, String>) -> Result<BrokerConfig> {
    let controller_names: Vec<String> = properties
        .get("controller.listener.names")
        .map(|v| v.split(',').map(|n| n.trim().to_ascii_uppercase()).collect())
        .unwrap_or_default();
    let mut broker = properties.clone();
    for key in ["listeners", "advertised.listeners"] {
        let Some(value) = properties.get(key) else { continue };
        let kept: Vec<&str> = value
            .split(',')
            .map(str::trim)
            .filter(|l| {
                let name = l.split_once("://").map_or("", |(name, _)| name);
                !controller_names.iter().any(|c| c.eq_ignore_ascii_case(name))
            })
            .collect();
        if kept.is_empty() && key == "listeners" {
            bail!(
                "process.roles includes 'broker', so 'listeners' needs a listener that is not in \
                 controller.listener.names"
            );
        }
        broker.insert(key.to_owned(), kept.join(","));
    }
    BrokerConfig::from_properties(&broker).context("invalid broker configuration")
}

/// A broker-only node's learner: its formatted metadata directory, and Raft's RPCs on an
/// ephemeral port of its first listener's host (the controller learns it at registration).
async fn learner_source(
    config: &KraftConfig,
    broker: &BrokerConfig,
    transport: &Arc<QuorumTransport>,
) -> Result<MetadataSource> {
    let dir = &config.metadata_log_dir;
    let meta = MetaProperties::read(&StdFs, dir)?
        .filter(|meta| meta.cluster_id.is_some())
        .with_context(|| {
            format!(
                "No `meta.properties` found in {} (have you run `seglog format` to format the directory?)",
                dir.display()
            )
        })?;
    if meta.node_id != Some(config.node_id) {
        bail!(
            "Stored node id {} doesn't match previous node id {} in {}",
            meta.node_id.unwrap_or(-1),
            config.node_id,
            dir.display()
        );
    }
    let host = broker.listeners.first().map_or_else(
        || std::net::IpAddr::from([127, 0, 0, 1]),
        |l| if l.bind.ip().is_unspecified() { [127, 0, 0, 1].into() } else { l.bind.ip() },
    );
    let raft_listener = tokio::net::TcpListener::bind((host, 0))
        .await
        .with_context(|| format!("cannot bind the metadata learner on {host}"))?;
    Ok(MetadataSource::Learner {
        fs: Arc::new(StdFs),
        metadata_dir: dir.clone(),
        raft_listener,
        transport: Arc::clone(transport),
    })
}

/// UnregisterBroker through the broker at `bootstrap`.
async fn unregister(bootstrap: &str, id: i32) -> Result<()> {
    use kafka_protocol::messages::{BrokerId, UnregisterBrokerRequest};
    let mut client = seglog_broker::wire::Client::connect(bootstrap)
        .await
        .with_context(|| format!("cannot reach the broker at {bootstrap}"))?;
    let request = UnregisterBrokerRequest::default().with_broker_id(BrokerId(id));
    let response = client.send(&request, 0).await.context("UnregisterBroker failed")?;
    if response.error_code != 0 {
        let name = kafka_protocol::ResponseError::try_from_code(response.error_code)
            .map_or_else(|| format!("error {}", response.error_code), |e| format!("{e:?}"));
        let text = response.error_message.map(|m| m.to_string()).unwrap_or_default();
        bail!(
            "broker {id} was not unregistered: {name}{}",
            if text.is_empty() { String::new() } else { format!(": {text}") }
        );
    }
    println!("Broker {id} is no longer registered.");
    Ok(())
}
