//! Transactions with real clients against `seglog serve`: kafka-python and confluent-kafka
//! commit, abort and fence (`tests/python/transactions.py`), and a Jepsen-style exactly-once
//! checker over a consume-transform-produce loop while the broker is killed with SIGKILL
//! (`tests/python/eos.py`). The scripts print what happened; the sets are computed here.

#![allow(clippy::print_stderr, reason = "the figures of a run go to stderr")]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::serve::{Broker, python, python_script};

/// Both libraries produce transactions at once (commits and aborts interleaved in the same 3
/// partitions) and fence a producer with a second one of the same transactional id; both
/// libraries read with read_committed (exactly the committed values, each once) and
/// read_uncommitted (every value, each once).
#[test]
fn python_transactions_commit_abort_fence_and_read_committed() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path());
    check_python_transactions(&python, &broker.addr, "txn");
    assert!(broker.terminate().success());
}

/// Runs `transactions.py` through `bootstrap` with topic `topic` and checks what it printed:
/// the commits, aborts and fences of both libraries, and their reads.
pub(crate) fn check_python_transactions(python: &Path, bootstrap: &str, topic: &str) {
    let output = Command::new(python)
        .arg(python_script("transactions.py"))
        .args([bootstrap, topic])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));

    let values = |prefix: &str| -> BTreeSet<&str> {
        stdout.lines().filter_map(|line| line.strip_prefix(prefix)).collect()
    };
    let committed = values("COMMITTED ");
    let aborted = values("ABORTED ");
    // 30 transactions of 3 records per library, a third aborted; the fenced producer's 3
    // records are aborted and its successor's 3 committed.
    assert_eq!(committed.len(), 2 * (20 * 3 + 3), "{stdout}");
    assert_eq!(aborted.len(), 2 * (10 * 3 + 3), "{stdout}");
    assert!(committed.is_disjoint(&aborted));
    let everything: BTreeSet<&str> = committed.union(&aborted).copied().collect();

    for library in ["kafka-python", "confluent-kafka"] {
        let fenced: Vec<&str> = stdout
            .lines()
            .filter_map(|line| line.strip_prefix(&format!("FENCED {library} ")))
            .collect();
        assert_eq!(fenced.len(), 1, "{library}: the first producer was not fenced:\n{stdout}");
        assert!(fenced[0].ends_with("fatal=True"), "{library}: {}", fenced[0]);
        eprintln!("{library}: the fenced producer got {}", fenced[0]);
        for (isolation, want) in [("read_committed", &committed), ("read_uncommitted", &everything)]
        {
            let prefix = format!("READ {library} {isolation} ");
            let read: Vec<&str> =
                stdout.lines().filter_map(|line| line.strip_prefix(&prefix)).collect();
            let check = check_values(&read, want, &aborted);
            assert!(check.is_exact(), "{library} {isolation}: {check:?}");
            let end = format!("END {library} {isolation} {}", read.len());
            assert!(stdout.lines().any(|line| line == end), "{library} {isolation}: no {end:?}");
            eprintln!("{library} {isolation}: read {} values, exactly those wanted", read.len());
        }
    }
}

/// How a read differs from the values it should have given.
#[derive(Debug, Default)]
struct ValuesCheck {
    missing: Vec<String>,
    /// Values of aborted transactions read (for read_committed).
    aborted_read: Vec<String>,
    /// Values read that nobody wrote.
    unexpected: Vec<String>,
    duplicated: Vec<String>,
}

impl ValuesCheck {
    fn is_exact(&self) -> bool {
        self.missing.is_empty()
            && self.aborted_read.is_empty()
            && self.unexpected.is_empty()
            && self.duplicated.is_empty()
    }
}

fn check_values(read: &[&str], want: &BTreeSet<&str>, aborted: &BTreeSet<&str>) -> ValuesCheck {
    let mut seen = BTreeSet::new();
    let mut check = ValuesCheck::default();
    for &value in read {
        if !seen.insert(value) {
            check.duplicated.push(value.to_owned());
        }
        if !want.contains(value) {
            if aborted.contains(value) {
                check.aborted_read.push(value.to_owned());
            } else {
                check.unexpected.push(value.to_owned());
            }
        }
    }
    check.missing = want.difference(&seen).map(|value| (*value).to_owned()).collect();
    check
}

/// SplitMix64: the seeded choices of the kill loop.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high` (the tiny modulo bias does not matter here).
    pub(crate) fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}

/// Where the next kill lands: after `commits` more committed transactions, at the next line
/// that starts with `at` (a transaction's phase, or its commit's report).
#[derive(Debug)]
struct KillPlan {
    commits: u64,
    at: &'static str,
}

impl KillPlan {
    fn draw(rng: &mut Rng) -> Self {
        // Lines that every transaction prints, so that a kill always comes.
        const POINTS: [&str; 4] = ["PHASE produce", "PHASE offsets", "PHASE commit", "COMMITTED"];
        let at = POINTS[usize::try_from(rng.next() % 4).expect("small")];
        Self { commits: rng.between(3, 9), at }
    }

    /// Whether `line` is the kill point once enough commits have been seen.
    fn hits(&self, line: &str, commits_since_restart: u64) -> bool {
        if commits_since_restart < self.commits {
            return false;
        }
        match self.at.strip_prefix("PHASE ") {
            Some(phase) => line.starts_with("PHASE ") && line.ends_with(phase),
            None => line.starts_with(self.at),
        }
    }
}

/// What the loop reported about its transactions.
#[derive(Debug, Default)]
struct History {
    committed: BTreeMap<String, usize>,
    aborted: BTreeMap<String, usize>,
    /// How many of `aborted` the loop aborted on purpose (the others after an error).
    n_aborted_deliberately: usize,
    unknown: BTreeMap<String, usize>,
    done: bool,
}

impl History {
    fn record(&mut self, line: &str) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let count = || fields[2].parse::<usize>().expect("count");
        match fields[0] {
            "COMMITTED" => assert!(self.committed.insert(fields[1].to_owned(), count()).is_none()),
            "ABORTED" => {
                assert!(self.aborted.insert(fields[1].to_owned(), count()).is_none());
                self.n_aborted_deliberately += usize::from(fields[3].ends_with(":deliberate"));
            }
            "UNKNOWN" => assert!(self.unknown.insert(fields[1].to_owned(), count()).is_none()),
            "DONE" => self.done = true,
            _ => {}
        }
    }
}

/// One output record as the checker read it.
#[derive(Debug, Clone)]
struct Output {
    #[expect(dead_code, reason = "printed with the anomalies it shows in")]
    partition: i32,
    #[expect(dead_code, reason = "printed with the anomalies it shows in")]
    offset: i64,
    k: u64,
    txn: String,
}

/// What `eos.py check` printed.
#[derive(Debug, Default)]
struct Observed {
    /// `k` -> (partition, offset) of `in-<k>`.
    inputs: BTreeMap<u64, (i32, i64)>,
    n_input_lines: usize,
    outputs: Vec<Output>,
    raw_outputs: Vec<Output>,
    /// (topic, partition) -> (read_committed end, read_uncommitted end).
    ends: BTreeMap<(String, i32), (i64, i64)>,
    group_offsets: BTreeMap<i32, i64>,
}

impl Observed {
    fn parse(stdout: &str) -> Self {
        let mut observed = Self::default();
        for line in stdout.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let int = |i: usize| fields[i].parse::<i64>().expect("number");
            let output = || Output {
                partition: i32::try_from(int(1)).expect("partition"),
                offset: int(2),
                k: fields[3].parse().expect("k"),
                txn: fields[4].to_owned(),
            };
            match fields[0] {
                "IN" => {
                    observed.n_input_lines += 1;
                    let partition = i32::try_from(int(1)).expect("partition");
                    observed.inputs.insert(fields[3].parse().expect("k"), (partition, int(2)));
                }
                "OUT" => observed.outputs.push(output()),
                "RAW" => observed.raw_outputs.push(output()),
                "END" => {
                    let key = (fields[1].to_owned(), i32::try_from(int(2)).expect("partition"));
                    observed.ends.insert(key, (int(3), int(4)));
                }
                "GROUP-OFFSET" => {
                    observed
                        .group_offsets
                        .insert(i32::try_from(int(1)).expect("partition"), int(2));
                }
                _ => panic!("unexpected check line {line:?}"),
            }
        }
        observed
    }
}

/// The checker's counts; a correct run has every one at 0.
#[derive(Debug, Default, PartialEq, Eq)]
struct Anomalies {
    /// `in-<k>` with no `out-<k>` visible.
    lost: usize,
    /// Extra copies of an `out-<k>` (a record seen three times counts 2).
    duplicated: usize,
    /// Visible output records of a transaction the loop saw abort.
    aborted_read: usize,
    /// Committed transactions with other than their count visible, and transactions of
    /// unknown outcome neither wholly visible nor wholly invisible.
    torn: usize,
    /// Visible output records of a transaction the loop never reported.
    unexplained: usize,
    /// Input partitions whose committed offset is past the input log end or short of it (the
    /// loop said it was done), plus input records below a committed offset with no output.
    offset_violations: usize,
    /// Partitions whose read_committed end differs from the read_uncommitted end: a
    /// transaction left open after the loop finished.
    hanging: usize,
}

fn check_eos(history: &History, observed: &Observed, input: &str) -> (Anomalies, Vec<String>) {
    let mut anomalies = Anomalies::default();
    let mut examples = Vec::new();
    let mut example = |text: String| {
        if examples.len() < 20 {
            examples.push(text);
        }
    };
    let mut copies: BTreeMap<u64, Vec<&Output>> = BTreeMap::new();
    let mut visible: BTreeMap<&str, usize> = BTreeMap::new();
    for output in &observed.outputs {
        copies.entry(output.k).or_default().push(output);
        *visible.entry(output.txn.as_str()).or_default() += 1;
        if history.aborted.contains_key(&output.txn) {
            anomalies.aborted_read += 1;
            example(format!("aborted read: {output:?}"));
        } else if !history.committed.contains_key(&output.txn)
            && !history.unknown.contains_key(&output.txn)
        {
            anomalies.unexplained += 1;
            example(format!("unexplained: {output:?}"));
        }
    }
    for (k, outputs) in &copies {
        if outputs.len() > 1 {
            anomalies.duplicated += outputs.len() - 1;
            example(format!("duplicated out-{k}: {outputs:?}"));
        }
        if !observed.inputs.contains_key(k) {
            anomalies.unexplained += outputs.len();
            example(format!("out-{k} of no input: {outputs:?}"));
        }
    }
    for k in observed.inputs.keys() {
        if !copies.contains_key(k) {
            anomalies.lost += 1;
            example(format!("lost in-{k} at {:?}", observed.inputs[k]));
        }
    }
    for (txn, &count) in &history.committed {
        let seen = visible.get(txn.as_str()).copied().unwrap_or(0);
        if seen != count {
            anomalies.torn += 1;
            example(format!("torn: committed {txn} of {count} records shows {seen}"));
        }
    }
    for (txn, &count) in &history.unknown {
        let seen = visible.get(txn.as_str()).copied().unwrap_or(0);
        if seen != 0 && seen != count {
            anomalies.torn += 1;
            example(format!("torn: {txn} of unknown outcome, {count} records, shows {seen}"));
        }
    }
    for partition in 0..4 {
        let end = observed.ends.get(&(input.to_owned(), partition)).map(|&(end, _)| end);
        let committed = observed.group_offsets.get(&partition).copied();
        if end.is_none() || committed != end {
            anomalies.offset_violations += 1;
            example(format!("input partition {partition}: committed {committed:?}, end {end:?}"));
        }
        let below = observed.inputs.iter().filter(|&(k, &(p, offset))| {
            p == partition && offset < committed.unwrap_or(0) && !copies.contains_key(k)
        });
        for (k, _) in below {
            anomalies.offset_violations += 1;
            example(format!("in-{k} below the committed offset has no output"));
        }
    }
    for ((topic, partition), (committed_end, uncommitted_end)) in &observed.ends {
        if committed_end != uncommitted_end {
            anomalies.hanging += 1;
            example(format!("{topic}-{partition}: LSO {committed_end} < HW {uncommitted_end}"));
        }
    }
    (anomalies, examples)
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |value| value.parse().expect("a number"))
}

/// The exactly-once checker: `eos.py loop` (confluent-kafka: read_committed consumer in a
/// group, transactional producer, send_offsets_to_transaction, abort and rewind on errors)
/// turns `in-<k>` into `out-<k>` while the broker is killed with SIGKILL at seeded points
/// (every 3 to 9 commits, at least 10 times) and restarted on the same port. Then the output
/// topic, read_committed from the start, must hold every input's output exactly once,
/// nothing of an aborted transaction (the loop also aborts one transaction in 8 on purpose,
/// after flushing its records), every committed transaction whole, and the group's offsets
/// at the input's end.
/// `SEGLOG_EOS_RECORDS` sets the number of input records (20,000), `SEED` the seed.
#[test]
fn eos_loop_under_sigkill_loses_duplicates_and_tears_nothing() {
    let Some(python) = python() else { return };
    let n_records = env_number("SEGLOG_EOS_RECORDS", 20_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let mut broker = Broker::start(&data);
    let addr = broker.addr.clone();
    let run = EosRun {
        python: &python,
        bootstrap: &addr,
        dir: dir.path(),
        n_records,
        min_kills: 10,
        replication_factor: 1,
        filled: false,
    };
    run.check(&mut |_| {
        broker.child.kill().expect("SIGKILL");
        broker.child.wait().expect("reaped");
        // Start again on the same port: this returns once the broker announces its
        // address, so the next kill never lands on a broker still starting.
        broker = Broker::start_on(&data, &addr);
    });
    assert!(broker.terminate().success());
}

/// One run of the exactly-once checker.
pub(crate) struct EosRun<'a> {
    pub(crate) python: &'a Path,
    /// The brokers' bootstrap list.
    pub(crate) bootstrap: &'a str,
    /// Where the loop's stderr goes.
    pub(crate) dir: &'a Path,
    pub(crate) n_records: u64,
    pub(crate) min_kills: usize,
    /// The input and output topics' replication factor.
    pub(crate) replication_factor: u8,
    /// The input was filled already ([`EosRun::fill`]).
    pub(crate) filled: bool,
}

impl EosRun<'_> {
    /// One step of `eos.py` (`fill`, `check`): its standard output.
    fn step(&self, seed: u64, step: &str, extra: &[String]) -> String {
        let output = Command::new(self.python)
            .arg(python_script("eos.py"))
            .args([self.bootstrap, "eos", step])
            .args(extra)
            .env("EOS_REPLICATION_FACTOR", self.replication_factor.to_string())
            .output()
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "seed {seed}: {step}: {stderr}");
        stdout
    }

    /// Creates the input and output topics and fills the input (before faults begin, when
    /// `filled` says so).
    pub(crate) fn fill(&self, seed: u64) {
        let filled = self.step(seed, "fill", &[self.n_records.to_string()]);
        assert_eq!(filled.trim(), format!("FILLED {}", self.n_records));
    }

    /// Fills the input, runs the loop to its DONE with `kill_and_restart` at the seeded kill
    /// points (`SEED`, else the clock; printed), and asserts no anomaly and `min_kills` kills.
    pub(crate) fn check(&self, kill_and_restart: &mut dyn FnMut(&mut Rng)) {
        let started = Instant::now();
        let n_records = self.n_records;
        let seed = std::env::var("SEED").map_or_else(
            |_| {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                u64::try_from(now.expect("clock").as_nanos() % u128::from(u64::MAX)).expect("fits")
            },
            |seed| seed.parse().expect("SEED is a number"),
        );
        eprintln!("eos: seed {seed} (SEED={seed} repeats the kill plan), {n_records} records");
        let eos = |step: &str, extra: &[String]| self.step(seed, step, extra);
        if !self.filled {
            self.fill(seed);
        }

        // About 150 transactions whatever the size, so that the kills (every 3 to 9 commits)
        // number well over 10.
        let batch = (n_records / 150).max(20);
        let loop_stderr = self.dir.join("loop.stderr");
        let (history, kills) = run_loop_with_kills(
            self.python,
            self.bootstrap,
            &loop_stderr,
            batch,
            seed,
            kill_and_restart,
        );
        let loop_done = started.elapsed();

        let observed = Observed::parse(&eos("check", &[]));
        assert_eq!(observed.n_input_lines, usize::try_from(n_records).expect("fits"));
        assert_eq!(observed.inputs.len(), observed.n_input_lines, "every in-<k> once in the input");
        let (anomalies, examples) = check_eos(&history, &observed, "eos-in");
        let n_kills: usize = kills.values().sum();
        let aborted_in_log = observed
            .raw_outputs
            .iter()
            .filter(|output| history.aborted.contains_key(&output.txn))
            .count();
        eprintln!(
            "eos: seed {seed}; {n_records} records, batches of at most {batch}; {n_kills} kills (at {kills:?}); \
             {} transactions committed, {} aborted ({} on purpose), {} of unknown outcome; {} output records \
             read_committed, {} in the log ({aborted_in_log} of aborted transactions); {anomalies:?}; \
             loop {:.1} s, total {:.1} s",
            history.committed.len(),
            history.aborted.len(),
            history.n_aborted_deliberately,
            history.unknown.len(),
            observed.outputs.len(),
            observed.raw_outputs.len(),
            loop_done.as_secs_f64(),
            started.elapsed().as_secs_f64(),
        );
        assert_eq!(anomalies, Anomalies::default(), "seed {seed}: {examples:#?}");
        assert!(n_kills >= self.min_kills, "seed {seed}: only {n_kills} kills");
    }
}

/// The checker finds each kind of anomaly it counts (so a clean run means something).
#[test]
fn check_eos_counts_each_anomaly() {
    let mut history = History::default();
    for line in
        ["COMMITTED r1/1 2", "COMMITTED r1/2 2", "ABORTED r1/3 1 commit:x", "UNKNOWN r2/4 2 x"]
    {
        history.record(line);
    }
    let check = |lines: &[&str]| check_eos(&history, &Observed::parse(&lines.join("\n")), "in").0;
    let inputs = ["IN 0 0 0", "IN 0 1 1", "IN 1 0 2", "IN 1 1 3", "END in 0 2 2", "END in 1 2 2"];
    let offsets = ["GROUP-OFFSET 0 2", "GROUP-OFFSET 1 2", "GROUP-OFFSET 2 0", "GROUP-OFFSET 3 0"];
    let ends = ["END in 2 0 0", "END in 3 0 0"];
    let base: Vec<&str> = inputs.iter().chain(&offsets).chain(&ends).copied().collect();
    let with = |outputs: &[&'static str]| -> Vec<&'static str> {
        base.iter().copied().chain(outputs.iter().copied()).collect()
    };
    let clean = ["OUT 0 0 0 r1/1", "OUT 0 1 1 r1/1", "OUT 1 0 2 r1/2", "OUT 1 1 3 r1/2"];
    assert_eq!(check(&with(&clean)), Anomalies::default());
    let mut lost = with(&clean[..3]);
    lost.push("OUT 1 2 9 r1/2");
    let found = check(&lost);
    assert_eq!((found.lost, found.unexplained, found.offset_violations), (1, 1, 1), "{found:?}");
    let mut duplicated = with(&clean);
    duplicated.push("OUT 0 2 0 r1/1");
    assert_eq!(check(&duplicated), Anomalies { duplicated: 1, torn: 1, ..Anomalies::default() });
    let mut aborted = with(&clean);
    aborted.push("OUT 0 2 1 r1/3");
    assert_eq!(check(&aborted).aborted_read, 1);
    let mut torn_unknown = with(&clean);
    torn_unknown.push("OUT 0 2 1 r2/4");
    assert_eq!(check(&torn_unknown).torn, 1);
    let mut hanging = with(&clean);
    hanging.push("END out 0 1 2");
    assert_eq!(check(&hanging), Anomalies { hanging: 1, ..Anomalies::default() });
    let mut short = base.clone();
    short.retain(|line| *line != "GROUP-OFFSET 1 2");
    short.extend(["GROUP-OFFSET 1 3"].iter().chain(&clean));
    assert_eq!(check(&short).offset_violations, 1);
}

/// Runs `eos.py loop` to its DONE while killing the broker (SIGKILL) at the seeded points and
/// starting it again on the same port over `data`. Returns the running broker, what the loop
/// reported and the kills by kill point.
fn run_loop_with_kills(
    python: &Path,
    addr: &str,
    loop_stderr: &Path,
    batch: u64,
    seed: u64,
    kill_and_restart: &mut dyn FnMut(&mut Rng),
) -> (History, BTreeMap<&'static str, usize>) {
    let mut rng = Rng(seed);
    let mut child = Command::new(python)
        .arg(python_script("eos.py"))
        .args([addr, "eos", "loop", &batch.to_string(), &seed.to_string()])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(loop_stderr).expect("stderr file"))
        .spawn()
        .expect("python runs");
    let stdout = child.stdout.take().expect("stdout");
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut history = History::default();
    let mut transcript = Vec::new();
    let (mut kills, mut commits_since_restart) = (BTreeMap::<&str, usize>::new(), 0);
    let mut plan = KillPlan::draw(&mut rng);
    let fail = |why: &str, transcript: &[String]| -> ! {
        let tail = transcript[transcript.len().saturating_sub(40)..].join("\n");
        let stderr = std::fs::read_to_string(loop_stderr).unwrap_or_default();
        let stderr_tail: Vec<&str> = stderr.lines().rev().take(40).collect();
        panic!(
            "seed {seed}: {why}\nloop stdout tail:\n{tail}\nloop stderr tail (last first):\n{}",
            stderr_tail.join("\n")
        );
    };
    loop {
        // The loop reports every few hundred milliseconds while the broker is up; two minutes
        // of silence is a hang.
        let line = match lines.recv_timeout(Duration::from_mins(2)) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                fail("the loop made no progress for 2 minutes", &transcript)
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        history.record(&line);
        if line.starts_with("COMMITTED ") {
            commits_since_restart += 1;
        }
        let kill = !history.done && plan.hits(&line, commits_since_restart);
        transcript.push(line);
        if kill {
            *kills.entry(plan.at).or_default() += 1;
            let n_kills: usize = kills.values().sum();
            transcript.push(format!("-- test: SIGKILL {n_kills} at {}, restart", plan.at));
            kill_and_restart(&mut rng);
            commits_since_restart = 0;
            plan = KillPlan::draw(&mut rng);
        }
    }
    let status = child.wait().expect("the loop exits");
    if !status.success() || !history.done {
        fail(&format!("the loop ended with {status} before DONE"), &transcript);
    }
    (history, kills)
}
