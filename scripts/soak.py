"""The soak: hours of a Kafka user's life on one broker, squeezed into --minutes (scripts/soak.sh).

Usage:
  soak.py run BOOTSTRAP --broker-pid PID --log-dir DIR --work DIR --minutes M
              [--partitions N] [--rate R] [--png PATH]
  soak.py ROLE ...   (a worker that `run` starts; not for direct use)

`run` creates the topics, starts the workers below as processes, samples the broker every 10 s,
stops the workers at the deadline, reads everything back, judges and plots. Workers:

  producer-ck     confluent-kafka (librdkafka), acks=all, idempotence on: --rate records/s to
                  random partitions of `soak` (--partitions) and, one in ten, of `soak-groups`
                  (64); it writes every acknowledgement (topic, partition, offset, sequence)
                  and the produce() to acknowledgement latency of each 10 s and each minute.
  producer-kp     kafka-python, acks=all, idempotence on, --rate/10 records/s, the same way.
  consumer-steady one confluent-kafka member of group soak-steady reading `soak` from the start,
                  committing as it goes; its consumer lag (librdkafka's statistics) every 10 s.
  churn-groups    group members joining and leaving every 2 to 5 s: kafka-python and
                  librdkafka in one classic group, librdkafka with group.protocol=consumer
                  (KIP-848) in another, all on `soak-groups`.
  churn-topics    every 10 s: create a topic of 10 partitions, produce 200 records to it and
                  read them back with kcat, then delete it and check it is gone; and 300
                  records of 1 KiB with kcat to `soak-retention` (8 partitions, 64 KiB
                  segments, retention.bytes 256 KiB), whose log start offsets must advance.

`soak` rolls each partition every 1 to 3 minutes (segment.ms 3 minutes, --segment-ms, with
segment.jitter.ms two thirds of it: Kafka's answer to partitions created together rolling
together, so the rolls and the retention deletes after them are spread over the run, not
2,000 at once) and `soak-groups` every 128 KiB, so rolls run throughout. `soak` keeps 10
minutes (retention.ms; --retention-ms), so that a long run reaches a steady number of
segments, as a Kafka user's topic does; `soak-groups` has no retention. The checker
counts an acknowledged record whose offset is below its partition's log start offset at the end
as expired, not lost; every other acknowledged record must be read back once, at its offset.

Each sample: the broker's RSS, open descriptors and threads (from /proc), the latest 10 s
produce p99, the steady group's lag, the `.log` files in the log directory and the sum of
`soak-retention`'s log start offsets. The pass conditions:
  - no acknowledged record lost, none doubled, none at another offset than acknowledged, no
    delivery failure, no worker error;
  - RSS and descriptors flat after the warm-up (the first sixth, at least 1 minute, and until
    the segment count of `soak` is steady, retention.ms + segment.ms, up to half the run: each
    segment holds some heap, so RSS grows with their number until retention deletes as many
    as rolls make): the least
    squares slope times the time after the warm-up is within max(5% of the median, 16 MiB) for
    RSS and within 32 for descriptors. When that time is under 10 minutes, as in CI's 3-minute
    run, a slope cannot tell a leak from the allocator's warm-up (each storage thread the
    blocking pool adds, at most 64, fills a heap of its own over the next minutes; CI's run
    of 2026-12-05 grew 29 MiB with threads 28 -> 40 and nothing leaking): such a run judges
    RSS by its bound instead, the highest sample after the warm-up within 50% (at least
    16 MiB) above the first one. A leak of 400 bytes per acknowledged record (1,100 records/s)
    fails it; the 30-minute run judges the slope;
  - the produce p99 of every minute after the first within 2x the first minute's, and every
    minute's under P99_CEILING_MS (the first minute starts after the first 10 s window, which
    holds the clients' start: connections, metadata, producer ids; that window is reported);
  - retention ran (soak-retention's log start offsets advanced) and every kind of group member
    was given partitions at least once.
Writes samples.jsonl, summary.json and the PNG; exits 1 on a failed condition.
"""

import argparse
import json
import os
import random
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time
from array import array

SAMPLE_S = 10.0
ACK = struct.Struct("<BHqI")  # topic index, partition, offset, sequence
TOPICS = ["soak", "soak-groups"]
GROUPS_PARTITIONS = 64
RETENTION_TOPIC = "soak-retention"
RETENTION_PARTITIONS = 8
# No minute's produce p99 may pass this, whatever the first minute's was (a debug build's first
# minute is already seconds).
P99_CEILING_MS = 250.0

stopping = threading.Event()


def on_term(_signum, _frame):
    stopping.set()


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def write_json(path, value):
    with open(path + ".tmp", "w") as out:
        json.dump(value, out)
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------------------------------------
# Producers

class LatencyLog:
    """Produce latencies in 10 s windows and whole minutes since t0, appended as JSON lines."""

    def __init__(self, work, t0):
        self.t0 = t0
        self.windows = open(os.path.join(work, "latency.jsonl"), "a")
        self.minutes = open(os.path.join(work, "minutes.jsonl"), "a")
        self.window, self.window_values = None, []
        self.minute, self.minute_values = None, []

    def add(self, seconds):
        now = time.time() - self.t0
        # Minute -1 is the first 10 s window (the clients' start); minute 0 starts after it.
        window, minute = int(now // SAMPLE_S), int((now - SAMPLE_S) // 60)
        if window != self.window:
            self.flush_window()
            self.window = window
        if minute != self.minute:
            self.flush_minute()
            self.minute = minute
        self.window_values.append(seconds)
        self.minute_values.append(seconds)

    def flush_window(self):
        if self.window_values:
            v = self.window_values
            self.windows.write(json.dumps({
                "t": (self.window + 1) * SAMPLE_S, "n": len(v), "p50": percentile(v, 0.5),
                "p99": percentile(v, 0.99), "max": max(v)}) + "\n")
            self.windows.flush()
        self.window_values = []

    def flush_minute(self):
        if self.minute_values:
            v = self.minute_values
            self.minutes.write(json.dumps({
                "minute": self.minute, "n": len(v), "p99": percentile(v, 0.99)}) + "\n")
            self.minutes.flush()
        self.minute_values = []

    def close(self):
        self.flush_window()
        self.flush_minute()


def pace(rate, started, sent):
    """How many records are due now at `rate` per second; sleeps briefly when none is."""
    due = int((time.monotonic() - started) * rate) - sent
    if due <= 0:
        time.sleep(0.002)
    return max(0, min(due, 1000))


def value_of(source, seq, record_bytes):
    head = f"{source} {seq} ".encode()
    return head + b"x" * max(0, record_bytes - len(head))


def pick(rng, partitions):
    if rng.random() < 0.1:
        return 1, rng.randrange(GROUPS_PARTITIONS)
    return 0, rng.randrange(partitions)


def role_producer_ck(args):
    from confluent_kafka import Producer
    rng = random.Random(1)
    acks = open(os.path.join(args.work, "ck.acks"), "ab")
    latency = LatencyLog(args.work, args.t0)
    state = {"acked": 0, "failed": 0, "errors": []}

    def delivered(err, msg):
        if err is not None:
            state["failed"] += 1
            if len(state["errors"]) < 10:
                state["errors"].append(str(err))
            return
        seq = int(msg.value().split(b" ", 2)[1])
        acks.write(ACK.pack(TOPICS.index(msg.topic()), msg.partition(), msg.offset(), seq))
        state["acked"] += 1
        latency.add(msg.latency())

    def fatal(err):
        if err.fatal() and len(state["errors"]) < 10:
            state["errors"].append(f"fatal: {err}")

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5, "error_cb": fatal})
    started, seq = time.monotonic(), 0
    while not stopping.is_set():
        for _ in range(pace(args.rate, started, seq)):
            topic, partition = pick(rng, args.partitions)
            while True:
                try:
                    producer.produce(TOPICS[topic], value_of("ck", seq, args.record_bytes),
                                     partition=partition, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
            seq += 1
        producer.poll(0)
    left = producer.flush(120)
    latency.close()
    acks.close()
    write_json(os.path.join(args.work, "producer-ck.json"), {
        "produced": seq, "acked": state["acked"], "failed": state["failed"],
        "undelivered_at_exit": left, "errors": state["errors"]})


def role_producer_kp(args):
    from kafka import KafkaProducer
    rng = random.Random(2)
    acks = open(os.path.join(args.work, "kp.acks"), "ab")
    state = {"acked": 0, "failed": 0, "errors": []}
    lock = threading.Lock()

    def delivered(seq, metadata):
        with lock:
            acks.write(ACK.pack(TOPICS.index(metadata.topic), metadata.partition,
                                metadata.offset, seq))
            state["acked"] += 1

    def failed(error):
        with lock:
            state["failed"] += 1
            if len(state["errors"]) < 10:
                state["errors"].append(repr(error))

    producer = KafkaProducer(bootstrap_servers=args.bootstrap, acks="all",
                             enable_idempotence=True, linger_ms=5)
    rate = args.rate / 10
    started, seq = time.monotonic(), 0
    while not stopping.is_set():
        for _ in range(pace(rate, started, seq)):
            topic, partition = pick(rng, args.partitions)
            future = producer.send(TOPICS[topic], value=value_of("kp", seq, args.record_bytes),
                                   partition=partition)
            future.add_callback(lambda metadata, seq=seq: delivered(seq, metadata))
            future.add_errback(failed)
            seq += 1
    producer.flush(120)
    producer.close(60)
    with lock:
        acks.close()
        write_json(os.path.join(args.work, "producer-kp.json"), {
            "produced": seq, "acked": state["acked"], "failed": state["failed"],
            "errors": state["errors"]})


# ---------------------------------------------------------------------------------------------
# Consumers

def role_consumer_steady(args):
    from confluent_kafka import Consumer
    lag_log = open(os.path.join(args.work, "lag.jsonl"), "a")
    state = {"consumed": 0, "errors": []}

    def stats(text):
        partitions = json.loads(text).get("topics", {}).get("soak", {}).get("partitions", {})
        lags = [p.get("consumer_lag_stored", p.get("consumer_lag", -1))
                for key, p in partitions.items() if key != "-1"]
        known = [lag for lag in lags if lag >= 0]
        lag_log.write(json.dumps({"t": time.time() - args.t0, "lag": sum(known),
                                  "partitions": len(known)}) + "\n")
        lag_log.flush()

    def fatal(err):
        if err.fatal() and len(state["errors"]) < 10:
            state["errors"].append(f"fatal: {err}")

    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "soak-steady",
                         "auto.offset.reset": "earliest", "statistics.interval.ms": 10000,
                         "stats_cb": stats, "error_cb": fatal})
    consumer.subscribe(["soak"])
    while not stopping.is_set():
        for msg in consumer.consume(1000, 0.5):
            if msg.error():
                if len(state["errors"]) < 10:
                    state["errors"].append(str(msg.error()))
            else:
                state["consumed"] += 1
    consumer.close()
    write_json(os.path.join(args.work, "consumer-steady.json"), state)


class Member(threading.Thread):
    """One group member of one kind, polling `soak-groups` until told to leave."""

    KINDS = ("kafka-python", "librdkafka-classic", "librdkafka-kip848")

    def __init__(self, kind, bootstrap):
        super().__init__(daemon=True)
        self.kind, self.bootstrap = kind, bootstrap
        self.leave = threading.Event()
        self.assigned = False
        self.error = None

    def run(self):
        try:
            if self.kind == "kafka-python":
                self.run_kafka_python()
            else:
                self.run_confluent()
        except Exception as error:  # reported by churn-groups
            self.error = f"{self.kind}: {error!r}"

    def run_kafka_python(self):
        from kafka import KafkaConsumer
        consumer = KafkaConsumer("soak-groups", bootstrap_servers=self.bootstrap,
                                 group_id="soak-churn-classic", auto_offset_reset="latest")
        while not self.leave.is_set():
            consumer.poll(timeout_ms=200)
            self.assigned = self.assigned or bool(consumer.assignment())
        consumer.close()

    def run_confluent(self):
        from confluent_kafka import Consumer
        errors = []
        config = {"bootstrap.servers": self.bootstrap, "auto.offset.reset": "latest",
                  "error_cb": lambda err: err.fatal() and errors.append(str(err))}
        if self.kind == "librdkafka-kip848":
            config.update({"group.id": "soak-churn-848", "group.protocol": "consumer"})
        else:
            config.update({"group.id": "soak-churn-classic"})
        consumer = Consumer(config)
        consumer.subscribe(["soak-groups"])
        while not self.leave.is_set() and not errors:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() and not errors:
                errors.append(str(msg.error()))
            self.assigned = self.assigned or bool(consumer.assignment())
        consumer.close()
        if errors:
            raise RuntimeError(errors[0])


def role_churn_groups(args):
    rng = random.Random(3)
    members, errors = [], []
    counts = {kind: {"joined": 0, "assigned": 0} for kind in Member.KINDS}

    def retire(member):
        member.leave.set()
        member.join(60)
        if member.is_alive():
            errors.append(f"{member.kind}: did not leave within 60 s")
        elif member.error:
            errors.append(member.error)
        counts[member.kind]["assigned"] += member.assigned

    while not stopping.wait(rng.uniform(2.0, 5.0)):
        if len(members) < 2 or (len(members) < 4 and rng.random() < 0.5):
            kind = Member.KINDS[sum(c["joined"] for c in counts.values()) % 3]
            member = Member(kind, args.bootstrap)
            member.start()
            members.append(member)
            counts[kind]["joined"] += 1
        else:
            retire(members.pop(rng.randrange(len(members))))
    for member in members:
        retire(member)
    write_json(os.path.join(args.work, "churn-groups.json"),
               {"members": counts, "errors": errors[:10], "error_count": len(errors)})


# ---------------------------------------------------------------------------------------------
# Topics created and deleted, and retention

def kcat(args, *flags, stdin=None):
    done = subprocess.run(["kcat", "-b", args.bootstrap, *flags], input=stdin,
                          capture_output=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"kcat {' '.join(flags)}: exit {done.returncode}: "
                           f"{done.stderr.decode(errors='replace')[-300:]}")
    return done.stdout


def role_churn_topics(args):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    state = {"created": 0, "deleted": 0, "retention_batches": 0, "errors": [], "error_count": 0}
    payload = b"".join(b"r" * 1023 + b"\n" for _ in range(300))
    n = 0
    while not stopping.wait(0 if n == 0 else 10.0):
        name = f"soak-tmp-{n}"
        n += 1
        try:
            kcat(args, "-P", "-t", RETENTION_TOPIC, "-X", "acks=all", "-X", "batch.size=16384",
                 stdin=payload)
            state["retention_batches"] += 1
            admin.create_topics([NewTopic(name, 10, 1, config={"segment.bytes": "16384"})])[
                name].result(60)
            state["created"] += 1
            lines = b"".join(f"{name} {i}\n".encode() for i in range(200))
            kcat(args, "-P", "-t", name, "-X", "acks=all", stdin=lines)
            out = kcat(args, "-C", "-t", name, "-o", "beginning", "-e", "-q", "-f", "%s\n")
            got = sorted(out.decode().split("\n")[:-1])
            if got != sorted(line.decode() for line in lines.split(b"\n")[:-1]):
                raise RuntimeError(f"{name}: read back {len(got)} records, want 200")
            admin.delete_topics([name])[name].result(60)
            state["deleted"] += 1
            if name in admin.list_topics(timeout=30).topics:
                raise RuntimeError(f"{name} is still listed after its deletion")
        except Exception as error:
            if len(state["errors"]) < 10:
                state["errors"].append(f"{name}: {error}")
            state["error_count"] += 1
    write_json(os.path.join(args.work, "churn-topics.json"), state)


# ---------------------------------------------------------------------------------------------
# The run: topics, workers, samples, the check, the verdict and the plot

def proc_sample(pid):
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    return {"rss_mb": int(status["VmRSS"].split()[0]) / 1024,
            "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": int(status["Threads"])}


def last_json_line(path):
    try:
        with open(path, "rb") as f:
            lines = f.read().splitlines()
        return json.loads(lines[-1]) if lines else None
    except FileNotFoundError:
        return None


def count_log_files(log_dir):
    count = 0
    with os.scandir(log_dir) as entries:
        for entry in entries:
            try:
                if entry.is_dir():
                    with os.scandir(entry.path) as files:
                        count += sum(1 for f in files if f.name.endswith(".log"))
            except FileNotFoundError:  # a partition of a topic being deleted
                pass
    return count


def create_topics(bootstrap, partitions, retention_ms, segment_ms):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [
        NewTopic("soak", partitions, 1, config={
            "segment.ms": str(segment_ms), "segment.jitter.ms": str(segment_ms * 2 // 3),
            "segment.bytes": "1048576", "retention.ms": str(retention_ms)}),
        NewTopic("soak-groups", GROUPS_PARTITIONS, 1, config={
            "segment.bytes": "131072", "retention.ms": "-1"}),
        NewTopic(RETENTION_TOPIC, RETENTION_PARTITIONS, 1, config={
            "segment.bytes": "65536", "retention.bytes": "262144", "retention.ms": "120000"}),
    ]
    for name, future in admin.create_topics(topics, operation_timeout=120).items():
        future.result(180)


def slope_per_minute(points):
    """Least squares slope of [(minute, value)]."""
    if len(points) < 2:
        return 0.0
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def check(bootstrap, work, partitions):
    """Reads `soak` and `soak-groups` back whole; counts lost, doubled and misplaced records."""
    from confluent_kafka import Consumer, TopicPartition
    sources = {}
    for source in ("ck", "kp"):
        with open(os.path.join(work, f"producer-{source}.json")) as f:
            produced = json.load(f)["produced"]
        expected = {"topic": array("b", [-1]) * produced, "partition": array("H", [0]) * produced,
                    "offset": array("q", [-1]) * produced, "seen": bytearray(produced),
                    "acked": 0}
        with open(os.path.join(work, f"{source}.acks"), "rb") as f:
            data = f.read()
        for topic, partition, offset, seq in ACK.iter_unpack(data):
            expected["topic"][seq], expected["partition"][seq] = topic, partition
            expected["offset"][seq] = offset
            expected["acked"] += 1
        sources[source] = expected
    # Retention may advance a log start offset while the check reads: a partition reset to
    # its earliest offset (not the latest), and expiry is judged by the log starts after it.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-check",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 50,
                         "auto.offset.reset": "earliest"})

    from confluent_kafka.admin import AdminClient, OffsetSpec
    admin = AdminClient({"bootstrap.servers": bootstrap})
    keys = [(t, p) for t, _ in enumerate(TOPICS)
            for p in range(partitions if t == 0 else GROUPS_PARTITIONS)]

    def watermarks():
        """(log start, high watermark) of every partition: two batched ListOffsets, not one
        request per partition and offset."""
        found = {key: [None, None] for key in keys}
        for side, spec in enumerate((OffsetSpec.earliest(), OffsetSpec.latest())):
            asked = {TopicPartition(TOPICS[t], p): spec for t, p in keys}
            for tp, future in admin.list_offsets(asked, request_timeout=60).items():
                found[(TOPICS.index(tp.topic), tp.partition)][side] = future.result().offset
        return {key: tuple(value) for key, value in found.items()}

    ends, log_starts = {}, {}
    for key, (low, high) in watermarks().items():
        log_starts[key] = low
        if high > low:
            ends[key] = high
    consumer.assign([TopicPartition(TOPICS[t], p, log_starts[(t, p)]) for (t, p) in ends])
    remaining = dict(ends)
    counts = {"read": 0, "doubled": 0, "misplaced": 0, "foreign": 0, "errors": []}
    deadline = time.monotonic() + 900
    while remaining and time.monotonic() < deadline:
        for msg in consumer.consume(10000, 1.0):
            if msg.error():
                counts["errors"].append(str(msg.error()))
                continue
            counts["read"] += 1
            t, p, offset = TOPICS.index(msg.topic()), msg.partition(), msg.offset()
            if offset + 1 >= remaining.get((t, p), 0):
                remaining.pop((t, p), None)
            try:
                source, seq = msg.value().split(b" ", 2)[:2]
                expected, seq = sources[source.decode()], int(seq)
                seen = expected["seen"][seq]
            except (KeyError, ValueError, IndexError):
                counts["foreign"] += 1
                continue
            if seen:
                counts["doubled"] += 1
            expected["seen"][seq] = min(255, seen + 1)
            if expected["offset"][seq] >= 0 and (
                    expected["topic"][seq], expected["partition"][seq],
                    expected["offset"][seq]) != (t, p, offset):
                counts["misplaced"] += 1
    final_log_starts = {key: low for key, (low, _) in watermarks().items()}
    consumer.close()
    lost = expired = 0
    for expected in sources.values():
        for seq, offset in enumerate(expected["offset"]):
            if offset < 0 or expected["seen"][seq]:
                continue
            key = (expected["topic"][seq], expected["partition"][seq])
            if offset < final_log_starts.get(key, 0):
                expired += 1
            else:
                lost += 1
    counts.update({
        "acked": sum(e["acked"] for e in sources.values()), "lost": lost,
        "expired_by_retention": expired,
        "unread_partitions": len(remaining),
        # Only `soak` has retention.
        "log_start_not_zero": sum(1 for (t, _), v in final_log_starts.items() if t != 0 and v),
        "soak_partitions_with_log_start": sum(
            1 for (t, _), v in final_log_starts.items() if t == 0 and v),
        "unacked_but_present": sum(
            1 for e in sources.values() for seq, offset in enumerate(e["offset"])
            if offset < 0 and e["seen"][seq])})
    counts["errors"] = counts["errors"][:10]
    return counts


def run(args):
    os.makedirs(args.work, exist_ok=True)
    t0 = time.time()
    create_topics(args.bootstrap, args.partitions, args.retention_ms, args.segment_ms)
    print(f"soak: topics created in {time.time() - t0:.1f}s; running {args.minutes} minutes",
          flush=True)
    t0 = time.time()
    common = [args.bootstrap, "--work", args.work, "--t0", str(t0), "--partitions",
              str(args.partitions), "--rate", str(args.rate), "--record-bytes",
              str(args.record_bytes)]
    roles = ["producer-ck", "producer-kp", "consumer-steady", "churn-groups", "churn-topics"]
    workers = {}
    try:
        return supervise(args, t0, roles, workers, common)
    finally:
        for worker in workers.values():
            if worker.poll() is None:
                worker.kill()


def supervise(args, t0, roles, workers, common):
    """Starts the workers, samples until the deadline, stops them, then judges and plots."""
    from confluent_kafka import Consumer, TopicPartition
    for role in roles:
        err = open(os.path.join(args.work, f"{role}.err"), "w")
        workers[role] = subprocess.Popen([sys.executable, __file__, role, *common],
                                         stdout=err, stderr=subprocess.STDOUT)
    watermarks = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "soak-watch"})
    samples, failures = [], []
    deadline = t0 + args.minutes * 60
    next_sample = t0 + SAMPLE_S
    while time.time() < deadline and not failures:
        time.sleep(max(0.0, min(1.0, next_sample - time.time())))
        if not os.path.exists(f"/proc/{args.broker_pid}"):
            failures.append("the broker exited")
            break
        for role, worker in workers.items():
            if worker.poll() is not None:
                failures.append(f"worker {role} exited early with {worker.returncode}")
        if time.time() < next_sample:
            continue
        next_sample += SAMPLE_S
        sample = {"t": time.time() - t0, **proc_sample(args.broker_pid)}
        window = last_json_line(os.path.join(args.work, "latency.jsonl"))
        sample["p99_ms"] = window["p99"] * 1000 if window else None
        lag = last_json_line(os.path.join(args.work, "lag.jsonl"))
        sample["lag"] = lag["lag"] if lag else None
        sample["log_files"] = count_log_files(args.log_dir)
        sample["retention_log_start"] = sum(
            watermarks.get_watermark_offsets(TopicPartition(RETENTION_TOPIC, p), timeout=10)[0]
            for p in range(RETENTION_PARTITIONS))
        samples.append(sample)
        with open(os.path.join(args.work, "samples.jsonl"), "a") as out:
            out.write(json.dumps(sample) + "\n")
        print("soak: t=%4.0fs rss=%6.1fMB fds=%4d threads=%3d p99=%sms lag=%s logs=%d "
              "retention_start=%d" % (
                  sample["t"], sample["rss_mb"], sample["fds"], sample["threads"],
                  "-" if sample["p99_ms"] is None else f"{sample['p99_ms']:.1f}",
                  sample["lag"], sample["log_files"], sample["retention_log_start"]),
              flush=True)
    watermarks.close()
    for worker in workers.values():
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for role, worker in workers.items():
        try:
            worker.wait(300)
        except subprocess.TimeoutExpired:
            worker.kill()
            failures.append(f"worker {role} did not stop within 300 s")
    results = {}
    for role in roles:
        path = os.path.join(args.work, f"{role}.json")
        if os.path.exists(path):
            with open(path) as f:
                results[role] = json.load(f)
        else:
            failures.append(f"worker {role} left no result (see {role}.err)")
    summary = {"minutes": args.minutes, "partitions": args.partitions, "rate": args.rate,
               "workers": results, "failures": failures}
    if not failures:
        summary["check"] = verdict(args, samples, results, failures)
    summary["failures"] = failures
    write_json(os.path.join(args.work, "summary.json"), summary)
    plot(args, samples, summary)
    print(json.dumps(summary, indent=1))
    if failures:
        print("soak: FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"soak: passed; the plot is {args.png}")
    return 0


def verdict(args, samples, results, failures):
    """Checks the data and the samples; appends to failures; returns the figures."""
    check_t0 = time.time()
    counts = check(args.bootstrap, args.work, args.partitions)
    counts["check_s"] = round(time.time() - check_t0, 1)
    for key in ("lost", "doubled", "misplaced", "foreign", "unread_partitions",
                "log_start_not_zero"):
        if counts[key]:
            failures.append(f"read-back: {counts[key]} {key}")
    if counts["errors"]:
        failures.append(f"read-back errors: {counts['errors']}")
    for role, result in results.items():
        if result.get("failed"):
            failures.append(f"{role}: {result['failed']} deliveries failed: {result['errors']}")
        if result.get("errors") or result.get("error_count"):
            failures.append(f"{role}: errors {result.get('errors')}")
        if result.get("undelivered_at_exit"):
            failures.append(f"{role}: {result['undelivered_at_exit']} undelivered at exit")
    for kind, seen in results.get("churn-groups", {}).get("members", {}).items():
        if not seen["assigned"]:
            failures.append(f"no {kind} group member was ever given partitions ({seen})")
    if samples and samples[-1]["retention_log_start"] == 0:
        failures.append(f"{RETENTION_TOPIC}: retention never advanced a log start offset")

    steady_min = (args.retention_ms + args.segment_ms) / 60_000
    warmup_min = max(1.0, args.minutes / 6, min(args.minutes / 2, steady_min))
    steady = [s for s in samples if s["t"] / 60 >= warmup_min]
    figures = {"warmup_minutes": warmup_min, "samples": len(samples), "read_back": counts}
    if len(steady) >= 3:
        span = (steady[-1]["t"] - steady[0]["t"]) / 60
        for key, floor, unit in (("rss_mb", 16.0, "MiB"), ("fds", 32.0, "descriptors")):
            points = [(s["t"] / 60, s[key]) for s in steady]
            slope = slope_per_minute(points)
            median = statistics.median(v for _, v in points)
            figures[key] = {"slope_per_minute": round(slope, 3), "median": median,
                            "min": min(v for _, v in points), "max": max(v for _, v in points),
                            "growth_over_run": round(slope * span, 2)}
            if key == "rss_mb" and span < 10:
                # Too short for a slope (the docstring): the bound above the first sample.
                first, highest = points[0][1], max(v for _, v in points)
                allowed = max(floor, 0.5 * first)
                figures[key].update({"judged": "bound", "rise": round(highest - first, 2),
                                     "allowed": allowed})
                if highest - first > allowed:
                    failures.append(f"{key} not bounded after warm-up: from {first:.1f} to "
                                    f"{highest:.1f} {unit}, allowed a rise of {allowed:.1f}")
                continue
            allowed = floor if key == "fds" else max(floor, 0.05 * median)
            figures[key].update({"judged": "slope", "allowed": allowed})
            if abs(slope * span) > allowed:
                failures.append(f"{key} not flat after warm-up: {slope:.3f} {unit}/min over "
                                f"{span:.1f} min grows {slope * span:.1f}, allowed {allowed:.1f}")
    else:
        failures.append(f"only {len(steady)} samples after the warm-up")
    minutes = []
    with open(os.path.join(args.work, "minutes.jsonl")) as f:
        minutes = [json.loads(line) for line in f]
    startup = [m for m in minutes if m["minute"] < 0]
    # The last minute is partial (the run ends 10 s into it).
    minutes = [m for m in minutes if 0 <= m["minute"] < args.minutes - 1]
    if minutes:
        first = minutes[0]["p99"]
        worst = max(minutes[1:], key=lambda m: m["p99"], default=minutes[0])
        figures["p99_ms"] = {"startup_window": round(startup[0]["p99"] * 1000, 2)
                             if startup else None,
                             "first_minute": round(first * 1000, 2),
                             "worst_later_minute": worst["minute"],
                             "worst_later": round(worst["p99"] * 1000, 2),
                             "ceiling": P99_CEILING_MS,
                             "per_minute": [round(m["p99"] * 1000, 2) for m in minutes]}
        if worst["p99"] > 2 * first:
            failures.append(f"produce p99 of minute {worst['minute']} is "
                            f"{worst['p99'] * 1000:.1f} ms, over 2x the first minute's "
                            f"{first * 1000:.1f} ms")
        for m in minutes:
            if m["p99"] * 1000 > P99_CEILING_MS:
                failures.append(f"produce p99 of minute {m['minute']} is "
                                f"{m['p99'] * 1000:.1f} ms, over the ceiling of "
                                f"{P99_CEILING_MS:.0f} ms")
    else:
        failures.append("no produce latency was recorded")
    return figures


def plot(args, samples, summary):
    import soakplot
    figures = summary.get("check", {})
    first_p99 = figures.get("p99_ms", {}).get("first_minute")
    verdict_text = "PASSED" if not summary["failures"] else "FAILED"
    title = (f"seglog soak {verdict_text}: {args.partitions} partitions, {args.minutes} min, "
             f"{args.rate:.0f} rec/s")
    minute = [s["t"] / 60 for s in samples]
    panels = [
        {"title": "broker RSS (MB)", "points": list(zip(minute, [s["rss_mb"] for s in samples]))},
        {"title": "broker open descriptors", "color": soakplot.ORANGE,
         "points": list(zip(minute, [s["fds"] for s in samples]))},
        {"title": "produce p99 per 10 s (ms), librdkafka acks=all",
         "points": [(m, s["p99_ms"]) for m, s in zip(minute, samples) if s["p99_ms"] is not None],
         "limits": [(2 * first_p99, "2x first minute")] if first_p99 else []},
        {"title": "consumer lag of group soak-steady (records)",
         "points": [(m, s["lag"]) for m, s in zip(minute, samples) if s["lag"] is not None]},
    ]
    soakplot.chart(args.png, title, panels, x_max=args.minutes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("role", choices=["run", "producer-ck", "producer-kp", "consumer-steady",
                                         "churn-groups", "churn-topics"])
    parser.add_argument("bootstrap")
    parser.add_argument("--work", required=True)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--retention-ms", type=int, default=10 * 60 * 1000,
                        help="retention.ms of `soak`")
    parser.add_argument("--segment-ms", type=int, default=3 * 60 * 1000,
                        help="segment.ms of `soak` (segment.jitter.ms is two thirds of it)")
    parser.add_argument("--broker-pid", type=int)
    parser.add_argument("--log-dir")
    parser.add_argument("--png")
    parser.add_argument("--t0", type=float, default=time.time())
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    if args.role == "run":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        args.png = args.png or os.path.join(args.work, "soak.png")
        return run(args)
    globals()["role_" + args.role.replace("-", "_")](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
