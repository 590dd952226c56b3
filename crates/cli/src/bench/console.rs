//! `--workload console`: the web console under load, through the in-process broker on
//! 127.0.0.1. A topic of 10,000 partitions (`--wide-partitions`) and 1,000 groups (`--groups`),
//! each with committed offsets, then a paced producer (`--rate-mb-per-s`, default 20) to its
//! own topic for `--producer-secs`: alone, then while a client loads every console page in
//! turn (each page's API calls one after another, as its script makes them), back to back or
//! `--console-pages-per-sec` (a few people browsing: 2), alternating, twice.
//! Reported: each page's p99 and worst time next to the 500 ms goal, and the producer's p99
//! with the console loaded over without it (same run).

#![expect(clippy::cast_precision_loss, reason = "figures for a table")]

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::tiered::{Produced, create_topic, produce};
use super::txn::Client;
use super::{BenchArgs, broker_config, nanos_since, run_dir};

/// The goal of issue 23: every page within this, on this machine, while a producer runs.
const PAGE_GOAL: Duration = Duration::from_millis(500);
/// Producer and console phases, alternating.
const ROUNDS: usize = 2;

/// Each page and the API calls its script makes (`{group}`: the group in the middle).
const PAGES: &[(&str, &[&str])] = &[
    ("overview", &["/", "/api/v1/overview", "/api/v1/throughput"]),
    ("topics", &["/api/v1/topics?limit=50&sort=size&order=desc"]),
    ("topic (10,000 partitions)", &["/api/v1/topics/wide?limit=100"]),
    (
        "partition timeline",
        &[
            "/api/v1/topics/load/partitions/0/segments",
            "/api/v1/topics/load/partitions/0/segments/0/dump?lines=200",
            "/api/v1/topics/load/partitions/0/messages?limit=50",
        ],
    ),
    ("groups", &["/api/v1/groups?limit=50"]),
    ("group", &["/api/v1/groups/{group}"]),
    ("health", &["/api/v1/health"]),
];

/// One GET; fails unless it answers 200.
fn get(addr: SocketAddr, path: &str) -> Result<()> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    if !response.starts_with(b"HTTP/1.1 200") {
        let head = String::from_utf8_lossy(response.get(..200).unwrap_or(&response)).into_owned();
        bail!("GET {path}: {head}");
    }
    Ok(())
}

/// Loads every page in turn until `stop`, timing each page (its calls one after another), at
/// most `pages_per_sec` pages a second (0: back to back).
fn load_pages(
    addr: SocketAddr,
    stop: &AtomicBool,
    pages_per_sec: f64,
    group: &str,
) -> Result<Vec<Histogram<u64>>> {
    let mut times =
        PAGES.iter().map(|_| Histogram::<u64>::new(3)).collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let mut loaded = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for ((_, calls), histogram) in PAGES.iter().zip(&mut times) {
            if pages_per_sec > 0.0 {
                let due = started + Duration::from_secs_f64(loaded as f64 / pages_per_sec);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            let begun = Instant::now();
            for call in *calls {
                get(addr, &call.replace("{group}", group))?;
            }
            histogram.record(nanos_since(begun))?;
            loaded += 1;
        }
    }
    Ok(times)
}

/// Commits offset 0 on a few partitions of `wide` for each of `n` groups (admin commits).
async fn commit_groups(client: &mut Client, n: usize, partitions: i32) -> Result<()> {
    for g in 0..n {
        let first = i32::try_from(g * 7).unwrap_or(0) % partitions.max(1);
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(format!("group-{g:05}"))))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("wide")))
                    .with_partitions(
                        (0..3)
                            .map(|i| {
                                OffsetCommitRequestPartition::default()
                                    .with_partition_index((first + i) % partitions.max(1))
                                    .with_committed_offset(0)
                            })
                            .collect(),
                    ),
            ]);
        let response = client.send(&request, 8).await?;
        let failed = response.topics.iter().flat_map(|t| &t.partitions).find(|p| p.error_code != 0);
        if let Some(failed) = failed {
            bail!("commit of group-{g:05} failed with {}", failed.error_code);
        }
    }
    Ok(())
}

/// What the workload measured.
struct Figures {
    alone: Vec<Produced>,
    loaded: Vec<Produced>,
    pages: Vec<Histogram<u64>>,
}

async fn measure(args: &BenchArgs, root: &std::path::Path) -> Result<Figures> {
    let config = broker_config(
        args,
        root,
        &[
            ("seglog.console.listener", "127.0.0.1:0"),
            ("seglog.console.sample.interval.ms", "1000"),
            ("offsets.topic.num.partitions", "50"),
        ],
    )?;
    let dump: seglog_broker::console::DumpFn = Arc::new(crate::dump::console_page);
    let server = seglog_broker::Server::start_with_dump(config, dump).await?;
    let console = server.console_addr().context("the console is on")?;
    let mut client = Client::connect(server.local_addr()).await?;
    eprintln!(
        "seglog bench --workload console: {} partitions, {} groups; producer {} MB/s for {} s, \
         alone then with every page loading ({}), {ROUNDS} rounds",
        args.wide_partitions,
        args.groups,
        args.rate_mb_per_s_or(20.0),
        args.producer_secs,
        if args.console_pages_per_sec > 0.0 {
            format!("{} pages a second", args.console_pages_per_sec)
        } else {
            "back to back".to_owned()
        }
    );
    let started = Instant::now();
    create_topic(&mut client, "wide", args.wide_partitions, &[]).await?;
    create_topic(&mut client, "load", 1, &[("segment.bytes", (8u32 << 20).to_string())]).await?;
    commit_groups(&mut client, args.groups, args.wide_partitions).await?;
    eprintln!("set up in {:.1} s", started.elapsed().as_secs_f64());
    let rate = args.rate_mb_per_s_or(20.0);
    let total = (rate * 1e6 * args.producer_secs) as u64;
    let mut figures = Figures { alone: Vec::new(), loaded: Vec::new(), pages: Vec::new() };
    for _ in 0..ROUNDS {
        figures.alone.push(produce(&mut client, args, "load", total, rate).await?);
        let stop = Arc::new(AtomicBool::new(false));
        let loader = {
            let stop = Arc::clone(&stop);
            {
                let pages_per_sec = args.console_pages_per_sec;
                let group = format!("group-{:05}", args.groups / 2);
                std::thread::spawn(move || load_pages(console, &stop, pages_per_sec, &group))
            }
        };
        let produced = produce(&mut client, args, "load", total, rate).await;
        stop.store(true, Ordering::Relaxed);
        let pages = loader.join().map_err(|_| anyhow::anyhow!("the page loader panicked"))??;
        figures.loaded.push(produced?);
        if figures.pages.is_empty() {
            figures.pages = pages;
        } else {
            for (all, round) in figures.pages.iter_mut().zip(&pages) {
                all.add(round)?;
            }
        }
    }
    drop(client);
    server.shutdown().await?;
    Ok(figures)
}

/// Runs the console workload.
pub(super) fn run(args: &BenchArgs) -> Result<()> {
    let (root, _cleanup) = run_dir(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let figures = runtime.block_on(measure(args, &root))?;
    report(args, &figures)
}

fn merged(runs: &[Produced]) -> Result<Histogram<u64>> {
    let mut all = Histogram::<u64>::new(3)?;
    for run in runs {
        all.add(&run.latency)?;
    }
    Ok(all)
}

fn report(args: &BenchArgs, figures: &Figures) -> Result<()> {
    let ms = |nanos: u64| nanos as f64 / 1e6;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{:<28} {:>8} {:>10} {:>10}  goal", "page", "loads", "p99 ms", "max ms")?;
    let mut pages = Vec::new();
    for ((name, _), times) in PAGES.iter().zip(&figures.pages) {
        let (p99, max) = (ms(times.value_at_quantile(0.99)), ms(times.max()));
        let within = max <= PAGE_GOAL.as_secs_f64() * 1e3;
        let verdict = if within { "within 500 ms" } else { "OVER 500 ms" };
        writeln!(out, "{name:<28} {:>8} {p99:>10.1} {max:>10.1}  {verdict}", times.len())?;
        pages.push(
            serde_json::json!({"page": name, "loads": times.len(), "p99_ms": p99, "max_ms": max}),
        );
    }
    let alone = merged(&figures.alone)?;
    let loaded = merged(&figures.loaded)?;
    let (p99_alone, p99_loaded) =
        (ms(alone.value_at_quantile(0.99)), ms(loaded.value_at_quantile(0.99)));
    let ratio = p99_loaded / p99_alone.max(1e-9);
    writeln!(
        out,
        "producer p99: alone {p99_alone:.2} ms, with the console loaded {p99_loaded:.2} ms; ratio {ratio:.2} (goal: at most 1.10)"
    )?;
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "workload": "console",
            "partitions": args.wide_partitions,
            "groups": args.groups,
            "console_pages_per_sec": args.console_pages_per_sec,
            "pages": pages,
            "produce_alone_p99_ms": p99_alone,
            "produce_with_console_p99_ms": p99_loaded,
            "ratio_p99_with_console_vs_alone": ratio,
        });
        std::fs::write(path, serde_json::to_vec_pretty(&json)?)?;
    }
    Ok(())
}
