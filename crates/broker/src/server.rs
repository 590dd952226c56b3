//! The network side (Kafka's `SocketServer` and `KafkaRequestHandler`): the listener, one task
//! per connection reading size-prefixed frames, and a clean shutdown.
//!
//! Each connection handles one request at a time, in order, as Kafka does by muting a channel
//! until its response is sent; so responses keep the order of requests, and a connection holds
//! at most one request frame (at most `socket.request.max.bytes`) and one response in memory.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use seglog_storage::io::{BudgetFs, BudgetedStdFs, NofileLimit, is_descriptor_exhaustion};
use seglog_storage::log::load::LoadReport;
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::manager::{Background, DirFailure, LogManager, SystemClock};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::Broker;
use crate::config::BrokerConfig;
use crate::dispatch::{self, Outcome};
use crate::error::Error;
use crate::handlers::now_ms;
use crate::metrics;
use crate::security::Security;
use crate::security::handshake_stream::HandshakeStream;
use crate::security::sasl::{Authentication, Step};
use crate::security::throttle::Throttle;

/// Why the broker could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The log directories did not open (locked by another process, unreadable, ...).
    #[error("cannot open the log directories")]
    Storage(#[from] seglog_storage::Error),
    /// `__consumer_offsets` did not replay (or its task failed).
    #[error("cannot load consumer groups")]
    Groups(#[source] Error),
    /// `__transaction_state` did not replay (or its task failed).
    #[error("cannot load the transaction state")]
    Transactions(#[source] Error),
    /// A listener's TLS or SASL settings, or the security store, could not be loaded.
    #[error("cannot set up security")]
    Security(#[source] crate::security::SecurityError),
    #[error("cannot join the cluster")]
    Cluster(#[source] crate::cluster::raft::node::QuorumError),
    /// The dynamic broker configs (`seglog-dynamic-configs`) could not be read or applied.
    #[error("cannot load the dynamic broker configs: {0}")]
    DynamicConfigs(String),

    /// Tiered storage is on and its bucket cannot be used.
    #[error("cannot use remote storage")]
    RemoteStorage(#[source] Box<crate::tiering::TieringStartError>),
    /// A thread of the broker's could not start.
    #[error("cannot start the {what} thread")]
    Thread {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A listener could not bind.
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// How often the log manager's background work runs: below the smallest group-commit interval
/// that makes sense, so a group commit is never late by more than this.
const BACKGROUND_PERIOD: Duration = Duration::from_millis(1);
/// How long a shutdown waits for in-flight requests before it closes their connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// A running broker: its listeners, connections and the log manager's background thread.
#[derive(Debug)]
pub struct Server {
    broker: Arc<Broker>,
    /// Each listener's bound address, in `listeners` order.
    local_addrs: Vec<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
    console_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
    connections: Arc<JoinSetCounter>,
    background: Option<Background>,
}

/// Counts live connections, so that shutdown can wait for them.
#[derive(Debug, Default)]
struct JoinSetCounter {
    live: AtomicUsize,
    idle: tokio::sync::Notify,
}

impl JoinSetCounter {
    fn enter(self: &Arc<Self>) -> ConnectionGuard {
        self.live.fetch_add(1, Ordering::SeqCst);
        ConnectionGuard(Arc::clone(self))
    }
}

struct ConnectionGuard(Arc<JoinSetCounter>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        if self.0.live.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Warns of each producer-state snapshot a load found corrupt and deleted.
fn warn_corrupt_snapshots(partitions: &std::collections::BTreeMap<TopicPartition, LoadReport>) {
    for (tp, load) in partitions {
        for corrupt in &load.corrupt_snapshots {
            tracing::warn!(
                topic = %tp.topic,
                partition = tp.partition,
                path = %corrupt.path.display(),
                reason = %corrupt.reason,
                "deleted a corrupt producer-state snapshot"
            );
        }
    }
}

/// Tiered storage, when `remote.log.storage.system.enable` is on: the bucket (or `store`),
/// probed for conditional PUTs.
async fn open_tiering(
    config: &BrokerConfig,
    store: Option<Arc<dyn seglog_remote::object_store::ObjectStore>>,
) -> Result<Option<Arc<crate::tiering::Tiering>>, ServeError> {
    if !config.remote.enabled {
        return Ok(None);
    }
    let tiering = crate::tiering::Tiering::open(&config.remote, store)
        .await
        .map_err(|error| ServeError::RemoteStorage(Box::new(error)))?;
    tracing::info!(
        bucket = %config.remote.bucket,
        prefix = %config.remote.prefix,
        "remote storage open; conditional PUTs honoured"
    );
    Ok(Some(Arc::new(tiering)))
}

/// How long a start waits for the bucket's manifests before serving without them.
const RESTORE_TIMEOUT: Duration = Duration::from_mins(1);

/// Re-creates the tiered topics the bucket holds and the disk does not (`Tiering::restore`),
/// before serving; a bucket that fails or does not answer in [`RESTORE_TIMEOUT`] is logged
/// and the broker serves what its disk has.
async fn restore_from_bucket(broker: &Arc<Broker>) {
    let Some(tiering) = broker.tiering.as_ref() else { return };
    match tokio::time::timeout(RESTORE_TIMEOUT, tiering.restore(broker)).await {
        Ok(Ok(0)) => {}
        Ok(Ok(topics)) => tracing::info!(topics, "tiered topics re-created from the bucket"),
        Ok(Err(error)) => tracing::warn!(%error, "cannot read the bucket's manifests at start"),
        Err(_) => tracing::warn!(
            timeout = ?RESTORE_TIMEOUT,
            "the bucket's manifests did not come in time; serving the disk's topics"
        ),
    }
}

/// Binds an HTTP listener (`/metrics`, the console) when it is configured.
async fn bind_http(
    addr: Option<SocketAddr>,
) -> Result<(Option<TcpListener>, Option<SocketAddr>), ServeError> {
    let Some(addr) = addr else { return Ok((None, None)) };
    let listener =
        TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener.local_addr().map_err(|source| ServeError::Bind { addr, source })?;
    Ok((Some(listener), Some(bound)))
}

/// Starts the thread that loads, in the background, the logs the open left unloaded
/// ([`LogManager::load_unloaded`]); clients reaching a log first load it themselves.
fn spawn_log_loader(
    manager: &Arc<LogManager>,
    recovery: Arc<std::sync::Mutex<crate::console::Recovery>>,
) -> Result<(), ServeError> {
    let manager = Arc::clone(manager);
    std::thread::Builder::new()
        .name("seglog-log-loader".to_owned())
        .spawn(move || {
            let report = manager.load_unloaded();
            warn_corrupt_snapshots(&report.partitions);
            for (tp, error) in &report.failed {
                tracing::error!(topic = %tp.topic, partition = tp.partition, %error, "log load failed");
            }
            let recovered: usize = report.partitions.values().map(|r| r.segments_recovered).sum();
            {
                let mut figures =
                    recovery.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                figures.background_done = true;
                figures.loaded = report.partitions.len();
                figures.failed = report.failed.len();
                figures.segments_recovered += recovered;
                figures.bytes_truncated +=
                    report.partitions.values().map(|r| r.bytes_truncated).sum::<u64>();
                figures.background_ms =
                    u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX);
            }
            tracing::info!(
                loaded = report.partitions.len(),
                failed = report.failed.len(),
                segments_recovered = recovered,
                threads = report.threads,
                elapsed = ?report.elapsed,
                "logs loaded in the background"
            );
        })
        .map(drop)
        .map_err(|source| ServeError::Thread { what: "log loader", source })
}

impl Server {
    /// Opens the log directories (recovering them if needed), binds the listeners and starts
    /// serving. Returns once clients can connect.
    pub async fn start(config: BrokerConfig) -> Result<Self, ServeError> {
        Self::start_with(config, None, None).await
    }

    /// [`Server::start`] with the console's segment dumps printed by `dump` (the tools'
    /// `seglog dump`; without it the console's dump view answers 501).
    pub async fn start_with_dump(
        config: BrokerConfig,
        dump: crate::console::DumpFn,
    ) -> Result<Self, ServeError> {
        Self::start_with(config, None, Some(dump)).await
    }

    /// [`Server::start`] with tiered storage in `store` rather than the configured bucket
    /// (tests and benchmarks: an in-memory or fault-injecting store). Tiering must be enabled
    /// in `config`.
    pub async fn start_with_remote_store(
        config: BrokerConfig,
        store: Arc<dyn seglog_remote::object_store::ObjectStore>,
    ) -> Result<Self, ServeError> {
        Self::start_with(config, Some(store), None).await
    }

    /// [`Server::start_with_dump`] as a cluster's broker: it registers through `join` once its
    /// listeners are bound, and serves the metadata the quorum commits (docs/cluster.md).
    pub async fn start_in_cluster(
        config: BrokerConfig,
        dump: Option<crate::console::DumpFn>,
        join: crate::cluster::link::ClusterJoin,
    ) -> Result<Self, ServeError> {
        Self::start_joining(config, None, dump, Some(join)).await
    }

    async fn start_with(
        config: BrokerConfig,
        store: Option<Arc<dyn seglog_remote::object_store::ObjectStore>>,
        dump: Option<crate::console::DumpFn>,
    ) -> Result<Self, ServeError> {
        Self::start_joining(config, store, dump, None).await
    }

    async fn start_joining(
        config: BrokerConfig,
        store: Option<Arc<dyn seglog_remote::object_store::ObjectStore>>,
        dump: Option<crate::console::DumpFn>,
        join: Option<crate::cluster::link::ClusterJoin>,
    ) -> Result<Self, ServeError> {
        let mut log_config = config.log.clone();
        log_config.node_id = Some(config.node_id);
        // Partitions load in the background and at first use: the broker serves once it has
        // listed them (`storage::log::partition_log::lazy`).
        log_config.load_lazily = true;
        let (log_files, connections_max) = descriptor_budget(&config);
        let fs: Arc<dyn seglog_storage::io::Fs> = Arc::clone(&log_files) as _;
        let opening = Instant::now();
        let (manager, report) = tokio::task::spawn_blocking(move || {
            LogManager::open(fs, Arc::new(SystemClock), log_config)
        })
        .await
        .map_err(|error| {
            seglog_storage::Error::InvalidArgument(format!("log manager open panicked: {error}"))
        })??;
        let manager = Arc::new(manager);
        // KIP-966: an unclean restart leaves the ELRs.
        let clean_shutdown = report.clean_dirs.len() == config.log.log_dirs.len();
        // This node becomes leader of every partition it loaded, the only replica of each
        // (Kafka's `Partition.makeLeader`): the high watermark moves to the log end, so that
        // every record a restart finds is served without waiting for a new produce.
        manager.make_leaders()?;
        warn_corrupt_snapshots(&report.partitions);
        tracing::info!(
            partitions = manager.partitions().len(),
            unloaded = manager.unloaded_partitions(),
            clean_dirs = report.clean_dirs.len(),
            "log directories open"
        );
        let recovery = Arc::new(std::sync::Mutex::new(crate::console::Recovery::at_open(
            opening.elapsed(),
            &manager,
            &report,
        )));
        spawn_log_loader(&manager, Arc::clone(&recovery))?;
        let background = manager.start_background(BACKGROUND_PERIOD)?;
        let (listeners, local_addrs) = bind_listeners(&config).await?;
        let (metrics_listener, metrics_addr) = bind_http(config.metrics_listener).await?;
        let (console_listener, console_addr) = bind_http(config.console.listener).await?;
        let security = Security::new(&config, &manager).map_err(ServeError::Security)?;
        let dynamic = crate::handlers::load_dynamic_configs(&config, &manager)
            .map_err(ServeError::DynamicConfigs)?;
        let tiering = open_tiering(&config, store).await?;
        let broker = Arc::new(Broker::new(
            config,
            manager,
            &local_addrs,
            security,
            dynamic,
            log_files,
            tiering,
            recovery,
        ));
        if let Some(join) = join {
            join_cluster(&broker, join, &local_addrs, clean_shutdown).await?;
        }
        restore_from_bucket(&broker).await;
        let loading = Arc::clone(&broker);
        let started = Instant::now();
        let n_groups = tokio::task::spawn_blocking(move || loading.groups.load(now_ms()))
            .await
            .map_err(|source| Error::Task { what: "group load", source })
            .and_then(|loaded| loaded)
            .map_err(ServeError::Groups)?;
        tracing::info!(groups = n_groups, elapsed = ?started.elapsed(), "consumer groups loaded");
        let loading = Arc::clone(&broker);
        let n_txns =
            tokio::task::spawn_blocking(move || loading.txns.load(&loading.groups, now_ms()))
                .await
                .map_err(|source| Error::Task { what: "transaction load", source })
                .and_then(|loaded| loaded)
                .map_err(ServeError::Transactions)?;
        tracing::info!(transactional_ids = n_txns, "transaction state loaded");
        let (stop, stopped) = watch::channel(false);
        let connections = Arc::new(JoinSetCounter::default());
        let mut tasks = JoinSet::new();
        spawn_accept_loops(&mut tasks, &broker, listeners, &stopped, &connections, connections_max);
        tasks.spawn(security_ticks(Arc::clone(&broker), stopped.clone()));
        tasks.spawn(ticks(Arc::clone(&broker), stopped.clone(), GROUP_TICK_PERIOD, group_tick));
        tasks.spawn(ticks(Arc::clone(&broker), stopped.clone(), TXN_TICK_PERIOD, txn_tick));
        tasks.spawn(crate::tiering::run(Arc::clone(&broker), stopped.clone()));
        if let Some(listener) = console_listener {
            crate::console::spawn(Arc::clone(&broker), listener, stopped.clone(), dump)
                .map_err(|source| ServeError::Thread { what: "console", source })?;
        }
        if let Some(listener) = metrics_listener {
            metrics::install();
            tasks.spawn(metrics::upkeep(stopped.clone()));
            tasks.spawn(metrics::serve(Arc::clone(&broker), listener, stopped));
        }
        for (listener, addr) in broker.config.listeners.iter().zip(&local_addrs) {
            tracing::info!(listener = %listener.name, protocol = %listener.protocol, %addr, "listening");
        }
        tracing::info!(local_addr = %local_addrs.first().map(ToString::to_string).unwrap_or_default(), ?metrics_addr, ?console_addr, "seglog broker listening");
        Ok(Self {
            broker,
            local_addrs,
            metrics_addr,
            console_addr,
            stop,
            tasks,
            connections,
            background: Some(background),
        })
    }

    /// The address clients connect to: the first listener's.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addrs.first().copied().unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// Every listener's name and bound address, in `listeners` order.
    pub fn listeners(&self) -> Vec<(String, SocketAddr)> {
        self.broker
            .config
            .listeners
            .iter()
            .map(|l| l.name.clone())
            .zip(self.local_addrs.iter().copied())
            .collect()
    }

    /// The bound address of the listener named `name` (`SASL_SSL`), if there is one.
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        let index =
            self.broker.config.listeners.iter().position(|l| l.name.eq_ignore_ascii_case(name))?;
        self.local_addrs.get(index).copied()
    }

    /// The address of `/metrics`, when it is served.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Where the web console listens, if it is on.
    pub fn console_addr(&self) -> Option<SocketAddr> {
        self.console_addr
    }

    /// The broker state, for tests and tools in the same process.
    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
    }

    /// Stops accepting, lets every in-flight request finish (up to 30 s), then flushes and
    /// checkpoints every log and writes the clean-shutdown markers.
    pub async fn shutdown(mut self) -> Result<(), ServeError> {
        if let Some(link) = self.broker.cluster() {
            // Kafka's controlled shutdown: leaderships move away while this broker still
            // answers, so that clients learn the new leaders before it goes.
            if !link.member().controlled_shutdown(CONTROLLED_SHUTDOWN_TIMEOUT).await {
                tracing::warn!(
                    "controlled shutdown not granted within {CONTROLLED_SHUTDOWN_TIMEOUT:?}; stopping anyway"
                );
            }
        }
        let _ = self.stop.send(true);
        // Waiting joins and syncs answer now, so their connections can finish.
        self.broker.groups.shutdown();
        self.broker.txns.shutdown();
        let idle = self.connections.idle.notified();
        if self.connections.live.load(Ordering::SeqCst) > 0 {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, idle).await;
        }
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        if let Some(link) = self.broker.cluster() {
            link.shutdown().await;
            // No fetcher appends once the logs close.
            let replication = Arc::clone(&self.broker.replication);
            let _ = tokio::task::spawn_blocking(move || replication.shutdown()).await;
        }
        drop(self.background.take());
        let manager = Arc::clone(&self.broker.manager);
        tokio::task::spawn_blocking(move || {
            let result = manager.shutdown();
            // A failure the last tick did not see, or one of the shutdown's own flushes.
            report_dir_failures(&manager);
            result
        })
        .await
        .map_err(|error| {
            seglog_storage::Error::InvalidArgument(format!("shutdown panicked: {error}"))
        })??;
        tracing::info!("seglog broker stopped cleanly");
        Ok(())
    }
}

/// How long a cluster's broker waits for its controlled shutdown to be granted.
const CONTROLLED_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// The accept loop's backoff after a failed accept, doubling from the first to the second.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The descriptors kept for everything but log files and connections: listeners, the metrics
/// endpoint, the lock files, checkpoints written at one moment, TLS files, the runtime.
const DESCRIPTORS_RESERVED: u64 = 256;

/// The connections the broker accepts at once: `max.connections`, bounded by what RLIMIT_NOFILE
/// leaves after the log files' budget and [`DESCRIPTORS_RESERVED`] (at least 16), so that
/// accepting a connection never takes the descriptor a log needs.
fn connection_share(config: &BrokerConfig, limit: NofileLimit, open_files_max: usize) -> usize {
    let share = limit
        .soft
        .saturating_sub(u64::try_from(open_files_max).unwrap_or(u64::MAX))
        .saturating_sub(DESCRIPTORS_RESERVED)
        .max(16);
    usize::try_from(share).unwrap_or(usize::MAX).min(config.max_connections as usize)
}

/// Raises RLIMIT_NOFILE and splits it: the logs' file system within `seglog.open.files.max`,
/// and the connections accepted at once ([`connection_share`]).
fn descriptor_budget(config: &BrokerConfig) -> (Arc<BudgetFs>, usize) {
    let budgeted = BudgetedStdFs::new(config.log.open_files_max);
    let limit = budgeted.limit;
    if limit.soft != limit.soft_at_start {
        tracing::info!(
            from = limit.soft_at_start,
            to = limit.soft,
            "raised the open files limit (RLIMIT_NOFILE) to its hard limit"
        );
    }
    let connections_max = connection_share(config, limit, budgeted.fs.open_files_max());
    tracing::info!(
        open_files_max = budgeted.fs.open_files_max(),
        connections_max,
        rlimit_nofile = limit.soft,
        "descriptor budget: log files open at once (seglog.open.files.max) and connections"
    );
    (budgeted.fs, connections_max)
}

/// One accept loop per listener; `max.connections` counts every listener's connections
/// together, as in Kafka, within the descriptors' share of connections ([`connection_share`]).
fn spawn_accept_loops(
    tasks: &mut JoinSet<()>,
    broker: &Arc<Broker>,
    listeners: Vec<TcpListener>,
    stopped: &watch::Receiver<bool>,
    connections: &Arc<JoinSetCounter>,
    connections_max: usize,
) {
    let slots = Arc::new(Semaphore::new(connections_max));
    for (index, listener) in listeners.into_iter().enumerate() {
        tasks.spawn(accept_loop(
            Arc::clone(broker),
            index,
            listener,
            stopped.clone(),
            Arc::clone(connections),
            Arc::clone(&slots),
            connections_max,
        ));
    }
}

/// Binds every listener, in `listeners` order: the sockets and their bound addresses.
async fn bind_listeners(
    config: &BrokerConfig,
) -> Result<(Vec<TcpListener>, Vec<SocketAddr>), ServeError> {
    let mut listeners = Vec::with_capacity(config.listeners.len());
    let mut local_addrs = Vec::with_capacity(config.listeners.len());
    for listener in &config.listeners {
        let addr = listener.bind;
        let bound =
            TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })?;
        local_addrs.push(bound.local_addr().map_err(|source| ServeError::Bind { addr, source })?);
        listeners.push(bound);
    }
    Ok((listeners, local_addrs))
}

/// How often the group coordinator's timers run (sessions, rebalance delays and timeouts).
const GROUP_TICK_PERIOD: Duration = Duration::from_millis(100);
/// How often the transaction coordinator's timers run (and a prepared transaction's failed
/// markers are tried again).
const TXN_TICK_PERIOD: Duration = Duration::from_millis(250);

/// Joins the cluster as its broker: registers, links the coordinators to the cluster, and waits
/// until the controller has unfenced this broker and its replicas are made, so that clients
/// are served, and the coordinators load, from metadata that has caught up.
async fn join_cluster(
    broker: &Arc<Broker>,
    join: crate::cluster::link::ClusterJoin,
    bound: &[SocketAddr],
    clean_shutdown: bool,
) -> Result<(), ServeError> {
    broker.groups.use_cluster_metadata();
    broker.replicas.use_replication(Arc::clone(&broker.replication));
    broker.groups.use_replication(Arc::clone(&broker.replication));
    broker.txns.use_replication(Arc::clone(&broker.replication));
    let link =
        Arc::new(join.start(broker, bound, clean_shutdown).await.map_err(ServeError::Cluster)?);
    tokio::spawn(crate::replication::run_isr_changes(Arc::downgrade(broker)));
    broker.txns.use_cluster(Arc::clone(&link));
    broker.security.use_cluster(Arc::clone(&link));
    let _ = broker.cluster.set(Arc::clone(&link));
    link.wait_until_ready().await;
    Ok(())
}

/// Runs `work` on a blocking thread every `period` until the broker stops (a tick that runs
/// long delays the next one rather than overlapping it).
async fn ticks(
    broker: Arc<Broker>,
    mut stopped: watch::Receiver<bool>,
    period: Duration,
    work: fn(&Broker),
) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = stopped.changed() => return,
        }
        let broker = Arc::clone(&broker);
        let _ = tokio::task::spawn_blocking(move || work(&broker)).await;
    }
}

/// The group coordinator's timers, and the reports of failed directories and cleanings.
fn group_tick(broker: &Broker) {
    broker.groups.tick(now_ms());
    report_dir_failures(&broker.manager);
    report_cleaner_failures(&broker.manager);
}

/// The transaction coordinator's timers, on their own task: completing a prepared transaction
/// may wait on another broker (WriteTxnMarkers), which must not hold up the groups' timers.
fn txn_tick(broker: &Broker) {
    broker.txns.tick(&broker.groups, now_ms());
}

/// Logs each failed cleaning round, once, at warn level: the partition is uncleanable until a
/// restart or a change of its topic's configuration, and every other partition is still cleaned
/// (Kafka's cleaner thread logs "Unexpected exception thrown when cleaning log" and, unlike
/// this, may die).
pub(crate) fn report_cleaner_failures(manager: &LogManager) {
    for failure in manager.take_cleaner_failures() {
        let tp = &failure.topic_partition;
        tracing::warn!(
            topic = %tp.topic,
            partition = tp.partition,
            reason = %failure.reason,
            "the log cleaner failed on {tp} and marked it uncleanable (the other partitions are \
             still cleaned; a restart or a change of the topic's config retries it): {}",
            failure.reason
        );
    }
}

/// Logs each log directory that went offline, once, at error level: the call that failed, the
/// file and the cause, then what it means for clients (Kafka's `LogDirFailureHandler` logs the
/// failure and "Stopping serving replicas in dir"). docs/durability.md says what to do next.
pub(crate) fn report_dir_failures(manager: &LogManager) {
    for DirFailure { dir, failure } in manager.take_dir_failures() {
        let dir = dir.display();
        if let Some(failure) = &failure {
            tracing::error!(
                %dir,
                op = failure.op,
                path = %failure.path.display(),
                cause = %failure.cause,
                "i/o error in log directory {dir}: {failure}"
            );
        } else {
            tracing::error!(%dir, "i/o error in log directory {dir}");
        }
        let next = if failure.as_ref().is_some_and(|f| f.kind == std::io::ErrorKind::StorageFull) {
            "the disk is full: free space or grow the file system, then restart the broker"
        } else {
            "fix or replace the disk, then restart the broker (recovery runs at start)"
        };
        tracing::error!(
            %dir,
            "log directory {dir} is offline: its partitions are no longer served (clients get \
             KAFKA_STORAGE_ERROR, 56, and retry); nothing more is acknowledged there; {next}"
        );
    }
}

async fn accept_loop(
    broker: Arc<Broker>,
    listener_index: usize,
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
    connections: Arc<JoinSetCounter>,
    slots: Arc<Semaphore>,
    connections_max: usize,
) {
    let mut accept_failures: u64 = 0;
    let mut backoff = ACCEPT_BACKOFF_MIN;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                accept_failures = 0;
                backoff = ACCEPT_BACKOFF_MIN;
                accepted
            }
            Err(error) => {
                // Out of descriptors (EMFILE/ENFILE) or another failure: the connection waits in
                // the backlog while the loop backs off (10 ms doubling to 1 s), so it neither
                // spins nor logs a line per attempt (the first failure, then at powers of two).
                accept_failures += 1;
                if accept_failures.is_power_of_two() {
                    tracing::warn!(%error, failures = accept_failures, ?backoff, "accept failed; backing off");
                }
                let reason =
                    if is_descriptor_exhaustion(&error) { "emfile" } else { "accept error" };
                ::metrics::counter!("seglog_accept_failures_total", "reason" => reason)
                    .increment(1);
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    _ = stopped.changed() => return,
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tracing::warn!(%peer, max = connections_max, "max.connections (or the descriptors' share of connections) reached; closing");
            drop(stream);
            continue;
        };
        let Ok(per_ip) = broker.security.connection_quotas().try_acquire(peer.ip()) else {
            tracing::warn!(%peer, "max.connections.per.ip reached for {}; closing", peer.ip());
            ::metrics::counter!("seglog_connections_refused_total", "reason" => "max.connections.per.ip").increment(1);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let guard = connections.enter();
        let broker = Arc::clone(&broker);
        let stopped = stopped.clone();
        tokio::spawn(async move {
            ::metrics::gauge!("seglog_connections").increment(1.0);
            if let Err(reason) =
                accept_connection(&broker, listener_index, stream, peer, stopped).await
            {
                tracing::debug!(%peer, %reason, "connection closed");
            }
            ::metrics::gauge!("seglog_connections").decrement(1.0);
            drop(per_ip);
            drop(slot);
            drop(guard);
        });
    }
}

/// Runs a connection: its TLS handshake first on a TLS listener (bounded by
/// `seglog.authentication.timeout.ms`), then its requests.
async fn accept_connection(
    broker: &Arc<Broker>,
    listener_index: usize,
    stream: TcpStream,
    peer: SocketAddr,
    stopped: watch::Receiver<bool>,
) -> Result<(), CloseReason> {
    let Some(tls) = broker.security.tls(listener_index) else {
        let auth = Authentication::new(broker, listener_index, peer, None);
        return serve_connection(broker, stream, auth, stopped).await;
    };
    let timeout = Duration::from_millis(broker.config.security.authentication_timeout_ms);
    let stream = HandshakeStream::new(stream);
    let handshake =
        tokio::time::timeout(timeout, tls.acceptor().accept(stream).into_fallible()).await;
    let mut stream = match handshake {
        Ok(Ok(stream)) => stream,
        Ok(Err((error, tcp))) => {
            crate::security::record_tls_failure(broker, listener_index);
            close_after_alert(tcp.into_inner()).await;
            return Err(CloseReason::Tls(error.to_string()));
        }
        Err(_) => {
            crate::security::record_tls_failure(broker, listener_index);
            return Err(CloseReason::AuthenticationTimeout {
                timeout_ms: broker.config.security.authentication_timeout_ms,
            });
        }
    };
    stream.get_mut().0.handshake_done();
    let certificate =
        stream.get_ref().1.peer_certificates().and_then(|chain| chain.first().cloned());
    let principal = match certificate {
        None => None,
        Some(certificate) => {
            match broker.security.certificate_principal(listener_index, &certificate) {
                Ok(principal) => Some(principal),
                Err(error) => {
                    crate::security::record_tls_failure(broker, listener_index);
                    return Err(CloseReason::Tls(error));
                }
            }
        }
    };
    let auth = Authentication::new(broker, listener_index, peer, principal);
    serve_connection(broker, stream, auth, stopped).await
}

/// How long a refused TLS client is given to read the alert before its socket is dropped.
const TLS_ALERT_LINGER: Duration = Duration::from_millis(500);

/// Closes a connection whose TLS handshake failed so that the client reads the alert rustls
/// wrote (Kafka's clients report it as an SSL error): our side is shut down (FIN after the
/// alert), and what the client still sends is read and dropped until it closes or
/// `TLS_ALERT_LINGER` passes. Dropping the socket with unread bytes would send a reset, which
/// can discard the alert before the client reads it.
async fn close_after_alert(mut tcp: TcpStream) {
    let _ = tcp.shutdown().await;
    let mut sink = [0u8; 4096];
    let drain = async {
        while let Ok(read) = tcp.read(&mut sink).await {
            if read == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(TLS_ALERT_LINGER, drain).await;
}

/// Reloads listeners' certificates when their files change (`seglog.ssl.reload.interval.ms`).
async fn security_ticks(broker: Arc<Broker>, mut stopped: watch::Receiver<bool>) {
    let period = Duration::from_millis(broker.config.security.ssl_reload_interval_ms);
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = stopped.changed() => return,
        }
        let broker = Arc::clone(&broker);
        let _ = tokio::task::spawn_blocking(move || {
            broker.security.reload_certificates(&broker.config);
        })
        .await;
    }
}

/// Why a connection was closed by the broker.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CloseReason {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("request size {size} is outside [0, socket.request.max.bytes = {max}]")]
    FrameSize { size: i32, max: u32 },
    #[error("invalid request: {0}")]
    Invalid(#[source] Error),
    #[error("tls: {0}")]
    Tls(String),
    #[error("authentication did not finish within seglog.authentication.timeout.ms = {timeout_ms}")]
    AuthenticationTimeout { timeout_ms: u64 },
    #[error("authentication failed: {0}")]
    Authentication(String),
    #[error(
        "the session expired (connections.max.reauth.ms) and the client did not re-authenticate"
    )]
    SessionExpired,
}

/// Reads one frame's size. `None` at a clean end of stream or on shutdown between requests.
async fn read_frame<S: AsyncRead + Unpin>(
    stream: &mut S,
    max_bytes: u32,
    stopped: &mut watch::Receiver<bool>,
) -> Result<Option<Bytes>, CloseReason> {
    let mut size_bytes = [0u8; 4];
    let first = tokio::select! {
        read = stream.read(&mut size_bytes) => read?,
        _ = stopped.changed() => return Ok(None),
    };
    if first == 0 {
        return Ok(None);
    }
    if first < 4 {
        stream.read_exact(size_bytes.get_mut(first..).unwrap_or_default()).await?;
    }
    let size = i32::from_be_bytes(size_bytes);
    if size < 0 || size.cast_unsigned() > max_bytes {
        return Err(CloseReason::FrameSize { size, max: max_bytes });
    }
    let mut frame = BytesMut::zeroed(size as usize);
    stream.read_exact(&mut frame).await?;
    Ok(Some(frame.freeze()))
}

/// A connection's stream, and the socket under it where bytes go out as they are.
trait ConnectionStream: AsyncRead + AsyncWrite + Unpin {
    /// The TCP socket of a plaintext connection, where file ranges go with `sendfile`.
    fn plaintext_socket(&self) -> Option<&TcpStream>;
}

impl ConnectionStream for TcpStream {
    fn plaintext_socket(&self) -> Option<&TcpStream> {
        Some(self)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> ConnectionStream for tokio_rustls::server::TlsStream<S> {
    fn plaintext_socket(&self) -> Option<&TcpStream> {
        None
    }
}

async fn serve_connection<S: ConnectionStream>(
    broker: &Arc<Broker>,
    mut stream: S,
    mut auth: Authentication,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), CloseReason> {
    loop {
        if *stopped.borrow() {
            return Ok(());
        }
        let max_bytes = auth.frame_bytes_max(broker);
        let frame = match auth.deadline() {
            None => read_frame(&mut stream, max_bytes, &mut stopped).await?,
            Some(deadline) => {
                match tokio::time::timeout_at(
                    deadline,
                    read_frame(&mut stream, max_bytes, &mut stopped),
                )
                .await
                {
                    Ok(frame) => frame?,
                    Err(_) => {
                        return Err(CloseReason::AuthenticationTimeout {
                            timeout_ms: broker.config.security.authentication_timeout_ms,
                        });
                    }
                }
            }
        };
        let Some(frame) = frame else {
            return Ok(());
        };
        ::metrics::counter!("seglog_bytes_in_total").increment(frame.len() as u64 + 4);
        broker.console.traffic.bytes_in(frame.len() + 4);
        // Clients' requests per API for the console (its own calls to the handlers are not).
        let api_key = dispatch::peek_api_key(&frame);
        let (outcome, throttle) = match auth.on_frame(broker, frame).await {
            Step::Dispatch(frame, session) => {
                dispatch::handle_throttled(broker, frame, &session).await
            }
            Step::Respond(prefix, body) => (Outcome::Respond(prefix, body), Throttle::default()),
            Step::Fail { prefix, body, reason } => {
                if let Some((prefix, body)) = prefix.zip(body) {
                    stream.write_all_buf(&mut bytes::Buf::chain(prefix, body)).await?;
                    stream.flush().await?;
                }
                return Err(reason);
            }
        };
        if let Some(api_key) = api_key {
            let failed = matches!(outcome, Outcome::Close(_));
            broker.console.traffic.request(api_key as i16, failed);
        }
        match outcome {
            Outcome::Respond(prefix, body) => {
                ::metrics::counter!("seglog_bytes_out_total")
                    .increment((prefix.len() + body.len()) as u64);
                broker.console.traffic.bytes_out(prefix.len() + body.len());
                // One vectored write of header and body, no copy of the body.
                stream.write_all_buf(&mut bytes::Buf::chain(prefix, body)).await?;
                stream.flush().await?;
            }
            Outcome::RespondPieces(pieces) => {
                let n_bytes = crate::file_send::pieces_len(&pieces);
                ::metrics::counter!("seglog_bytes_out_total").increment(n_bytes as u64);
                broker.console.traffic.bytes_out(n_bytes);
                if let Some(socket) = stream.plaintext_socket() {
                    crate::file_send::write_pieces(socket, pieces).await?;
                } else {
                    crate::file_send::write_pieces_copied(&mut stream, pieces).await?;
                    stream.flush().await?;
                }
            }
            Outcome::NoResponse => {}
            Outcome::Close(reason) => return Err(CloseReason::Invalid(reason)),
        }
        if throttle.mute_ms > 0 {
            // KIP-219: the channel reads nothing until the throttle time has passed.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(throttle.mute_ms)) => {}
                _ = stopped.changed() => return Ok(()),
            }
        }
    }
}
