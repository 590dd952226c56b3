//! `seglog serve`: the Kafka-protocol broker over a log directory, until SIGINT or SIGTERM.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use seglog_broker::{BrokerConfig, Server};
use seglog_storage::config::parse_properties;

/// The most threads doing storage work (appends, reads, fsyncs) at once; more calls wait in
/// the runtime's queue. Tokio's default (512) let a storm of slow appends (2,000 partitions
/// rolling together in the soak) start 120 threads and keep 1 GB of their allocator caches.
pub(crate) const BLOCKING_THREADS_MAX: usize = 64;

/// Arguments of `seglog serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// A Kafka `server.properties` file (Kafka's key names). Flags override single keys.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where clients connect: `host:port` or `PLAINTEXT://host:port` (key `listeners`).
    #[arg(long, value_name = "ADDR")]
    listener: Option<String>,
    /// The log directories, comma-separated (key `log.dirs`; default ./seglog-data).
    #[arg(long, value_name = "DIRS")]
    log_dir: Option<String>,
    /// This broker's id (key `node.id`; default 1).
    #[arg(long)]
    node_id: Option<i32>,
    /// Where Prometheus scrapes `/metrics` (key `seglog.metrics.listener`; default
    /// 127.0.0.1:9308; an empty value turns it off).
    #[arg(long, value_name = "ADDR")]
    metrics_listener: Option<String>,
    /// Where the web console is served (key `seglog.console.listener`; default
    /// 127.0.0.1:9309; an empty value turns it off).
    #[arg(long, value_name = "ADDR")]
    console_listener: Option<String>,
    /// Any other key, as `key=value` (repeatable), like kafka-server-start.sh --override.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Writes a development CA, a server and a client certificate (PEM) and a
    /// `secure.properties` using them into DIR, then exits without serving.
    #[arg(long, value_name = "DIR")]
    generate_dev_certs: Option<PathBuf>,
}

fn properties(args: &ServeArgs) -> Result<BTreeMap<String, String>> {
    let mut properties = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            parse_properties(&text).with_context(|| format!("in {}", path.display()))?
        }
        None => BTreeMap::new(),
    };
    for item in &args.overrides {
        let (key, value) = item
            .split_once('=')
            .with_context(|| format!("--override {item:?} is not key=value"))?;
        properties.insert(key.trim().to_owned(), value.trim().to_owned());
    }
    let flags = [
        ("listeners", args.listener.clone()),
        ("log.dirs", args.log_dir.clone()),
        ("node.id", args.node_id.map(|id| id.to_string())),
        ("seglog.metrics.listener", args.metrics_listener.clone()),
        ("seglog.console.listener", args.console_listener.clone()),
    ];
    for (key, value) in flags {
        if let Some(value) = value {
            properties.insert(key.to_owned(), value);
        }
    }
    Ok(properties)
}

/// Runs the broker until SIGINT or SIGTERM, then shuts down cleanly.
pub(crate) fn run(args: &ServeArgs) -> Result<()> {
    if let Some(dir) = &args.generate_dev_certs {
        let certs = crate::dev_certs::generate(dir)?;
        println!("CA certificate (truststore):     {}", certs.ca.display());
        println!("server keystore (key and chain): {}", certs.server_keystore.display());
        println!("client certificate:              {}", certs.client_certificate.display());
        println!("client key:                      {}", certs.client_key.display());
        println!("broker settings using them:      {}", certs.properties.display());
        println!("run: seglog serve --config {}", certs.properties.display());
        return Ok(());
    }
    let properties = properties(args)?;
    let kraft = seglog_broker::cluster::kraft_config::KraftConfig::from_properties(&properties)
        .context("invalid KRaft configuration")?;
    if let Some(kraft) = kraft {
        return crate::cluster::run_kraft(kraft, &properties);
    }
    let config =
        BrokerConfig::from_properties(&properties).context("invalid broker configuration")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("seglog-broker")
        .max_blocking_threads(BLOCKING_THREADS_MAX)
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        // The handlers are in place before the broker says it serves: a SIGTERM sent as soon
        // as the address is announced stops it cleanly rather than killing it.
        let mut signals = Signals::install()?;
        let dirs = config.log.log_dirs.clone();
        let dump: seglog_broker::console::DumpFn = std::sync::Arc::new(crate::dump::console_page);
        let server = Server::start_with_dump(config, dump).await.with_context(|| {
            format!(
                "cannot start the broker on {}",
                dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(",")
            )
        })?;
        for (name, addr) in server.listeners().into_iter().skip(1) {
            eprintln!("seglog: listener {name} on {addr}");
        }
        eprintln!(
            "seglog: serving Kafka clients on {} (metrics: {}, console: {})",
            server.local_addr(),
            server
                .metrics_addr()
                .map_or_else(|| "off".to_owned(), |addr| format!("http://{addr}/metrics")),
            server.console_addr().map_or_else(|| "off".to_owned(), |addr| format!("http://{addr}"))
        );
        signals.wait().await;
        eprintln!("seglog: shutting down");
        server.shutdown().await.context("shutdown failed")?;
        eprintln!("seglog: stopped cleanly");
        Ok(())
    })
}

/// SIGTERM and SIGINT, listened for.
pub(crate) struct Signals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn install() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            terminate: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
            interrupt: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
        })
    }

    /// Returns at the first SIGTERM or SIGINT.
    pub(crate) async fn wait(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}
