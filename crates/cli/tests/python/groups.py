"""Consumer groups through kafka-python and confluent-kafka against `seglog serve`.

Usage:
  groups.py BOOTSTRAP PREFIX consume      two members per client library, default settings
  groups.py BOOTSTRAP PREFIX committed    after a broker restart: the committed offsets are back
  groups.py BOOTSTRAP PREFIX crash-load   idempotent produce and commits, printing acks
  groups.py BOOTSTRAP PREFIX crash-check  the committed offset and every value, after a crash

`consume`: for each library, a topic of 4 partitions gets 400 records; member A subscribes,
member B subscribes 1 s later; both poll until every record is in. The four scenarios below
run at once, each on its own topic and group. It prints how long after
B's start the group was balanced (both members with 2 partitions) and every record consumed,
and fails when that took 10 s or more. The members then close (committing their offsets, as
both libraries do by default).

Then a third member joins until all three hold partitions and leaves again; then B closes
(leaving the group) and A must get all 4 partitions. The same runs again with
confluent-kafka's cooperative-sticky assignor (incremental rebalances), and with its
`group.protocol=consumer` (KIP-848: the broker assigns).

`committed`: each group's committed offsets are 100 for each of the 4 partitions.

Only `auto.offset.reset` is set (to earliest, so records produced before the group formed
count); every timeout and interval is the library's default.
"""

import sys
import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

PARTITIONS = 4
PER_PARTITION = 100
LIMIT_S = 10.0


def create_topic(bootstrap, topic):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    admin.close()


def produce(bootstrap, topic):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    futures = [
        producer.send(topic, value=f"{p}-{i}".encode(), partition=p)
        for p in range(PARTITIONS)
        for i in range(PER_PARTITION)
    ]
    producer.flush()
    for future in futures:
        future.get(timeout=30)
    producer.close()


class Failure(Exception):
    """A scenario's failure, with what it saw."""


class Member(threading.Thread):
    """One group member polling until every record of the topic has been seen by the group."""

    def __init__(self, library, bootstrap, group, topic, seen, extra=None):
        super().__init__(daemon=True)
        self.library, self.bootstrap, self.group, self.topic = library, bootstrap, group, topic
        self.seen, self.done, self.extra = seen, threading.Event(), extra or {}
        self.assignment = set()
        self.error = None

    def run(self):
        try:
            if self.library == "kafka-python":
                self.run_kafka_python()
            else:
                self.run_confluent()
        except Exception as error:  # reported by the main thread
            self.error = error

    def run_kafka_python(self):
        consumer = KafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
            auto_offset_reset="earliest")
        while not self.done.is_set():
            for tp, messages in consumer.poll(timeout_ms=100).items():
                for message in messages:
                    self.seen.add((tp.partition, message.offset))
            self.assignment = {tp.partition for tp in consumer.assignment()}
        consumer.close()

    def run_confluent(self):
        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "auto.offset.reset": "earliest", "broker.address.family": "v4", **self.extra})
        consumer.subscribe([self.topic])
        while not self.done.is_set():
            message = consumer.poll(0.1)
            if message is not None:
                if message.error():
                    raise RuntimeError(f"confluent-kafka: {message.error()}")
                self.seen.add((message.partition(), message.offset()))
            self.assignment = {tp.partition for tp in consumer.assignment()}
        consumer.close()


def group_of_two(library, bootstrap, prefix, extra=None, label=None):
    label = label or library
    topic, group = f"{prefix}-{label}", f"{prefix}-{label}-group"
    create_topic(bootstrap, topic)
    produce(bootstrap, topic)
    seen = set()
    first = Member(library, bootstrap, group, topic, seen, extra)
    first.start()
    time.sleep(1)
    second_started = time.time()
    second = Member(library, bootstrap, group, topic, seen, extra)
    second.start()
    members = [first, second]

    def wait(what, condition):
        started = time.time()
        while time.time() - started < 60:
            for member in members:
                if member.error:
                    for other in members:
                        other.done.set()
                    raise Failure(f"{label}: {member.error}")
            if condition():
                return time.time()
            time.sleep(0.05)
        for member in members:
            member.done.set()
        raise Failure(f"{label}: not {what} after 60 s (assignments {first.assignment} "
                      f"{second.assignment}, {len(seen)} records)")

    total = PARTITIONS * PER_PARTITION
    balanced_at = wait("balanced", lambda: len(first.assignment) == 2
                       and len(second.assignment) == 2 and not first.assignment & second.assignment)
    everything_at = wait(f"all {total} records", lambda: len(seen) == total)
    ready = max(balanced_at, everything_at) - second_started
    print(f"{label} group of two: balanced {balanced_at - second_started:.2f} s and all {total} "
          f"records {everything_at - second_started:.2f} s after the second member started")
    # A third member joins: all three get partitions, none twice; then it leaves again.
    third_started = time.time()
    third = Member(library, bootstrap, group, topic, seen, extra)
    third.start()
    members.append(third)
    three_at = wait("balanced over three", lambda: all(m.assignment for m in members)
                    and sum(len(m.assignment) for m in members) == PARTITIONS
                    and len(set().union(*(m.assignment for m in members))) == PARTITIONS)
    print(f"{label}: a third member had partitions {three_at - third_started:.2f} s after it "
          f"started")
    third.done.set()
    third.join(30)
    members.remove(third)
    # The second member leaves (its close sends LeaveGroup): the first takes every partition.
    left_at = time.time()
    second.done.set()
    second.join(30)
    taken_at = wait("taken over", lambda: len(first.assignment) == PARTITIONS)
    print(f"{label}: after a member left, the other had all {PARTITIONS} partitions "
          f"{taken_at - left_at:.2f} s later")
    first.done.set()
    first.join(30)
    if ready >= LIMIT_S:
        raise Failure(f"{label}: took {ready:.2f} s, not under {LIMIT_S} s")


def consume(bootstrap, prefix):
    """The four scenarios at once, each with its own topic and group (as a broker serves
    many groups at a time); the first failure, if any, fails the run."""
    scenarios = [
        ("kafka-python", None, None),
        ("confluent-kafka", None, None),
        ("confluent-kafka", {"partition.assignment.strategy": "cooperative-sticky"},
         "cooperative-sticky"),
        # KIP-848: the broker assigns (ConsumerGroupHeartbeat).
        ("confluent-kafka", {"group.protocol": "consumer"}, "consumer-protocol"),
    ]
    failures = []

    def run(library, extra, label):
        try:
            group_of_two(library, bootstrap, prefix, extra, label)
        except Exception as error:  # noqa: BLE001 (every failure is reported below)
            failures.append(f"{label or library}: {error!r}")

    threads = [threading.Thread(target=run, args=scenario) for scenario in scenarios]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        sys.exit("\n".join(failures))


def committed(bootstrap, prefix):
    want = {p: PER_PARTITION for p in range(PARTITIONS)}
    for library in ("kafka-python", "confluent-kafka"):
        topic, group = f"{prefix}-{library}", f"{prefix}-{library}-group"
        if library == "kafka-python":
            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            offsets = admin.list_group_offsets({group: None})[group]
            admin.close()
            got = {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}
        else:
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                 "broker.address.family": "v4"})
            asked = [CkTopicPartition(topic, p) for p in range(PARTITIONS)]
            got = {tp.partition: tp.offset for tp in consumer.committed(asked, timeout=30)}
            consumer.close()
        if got != want:
            sys.exit(f"{library}: committed offsets after the restart are {got}, want {want}")
        print(f"{library}: committed offsets survived the restart")


CRASH_RECORDS = 2000


def crash_load(bootstrap, prefix):
    """Idempotent produce and synchronous commits, printing what was acknowledged, while the
    test kills the broker with SIGKILL and starts it again on the same port."""
    from confluent_kafka import KafkaException

    topic, group = f"{prefix}-crash", f"{prefix}-crash-group"
    create_topic_one = KafkaAdminClient(bootstrap_servers=bootstrap)
    create_topic_one.create_topics([NewTopic(topic, 1, 1)])
    create_topic_one.close()
    producer = Producer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4",
        "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    committer = Consumer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4", "group.id": group,
        "enable.auto.commit": False})

    def on_delivery(error, message):
        if error is None:
            print(f"ACK {message.value().decode()}", flush=True)
        else:
            print(f"NACK {error}", flush=True)

    for i in range(CRASH_RECORDS):
        producer.produce(topic, value=f"v-{i}".encode(), on_delivery=on_delivery)
        producer.poll(0)
        time.sleep(0.005)
        if (i + 1) % 20 == 0:
            try:
                committer.commit(offsets=[CkTopicPartition(topic, 0, i + 1)], asynchronous=False)
                print(f"COMMIT {i + 1}", flush=True)
            except KafkaException as error:
                print(f"COMMITFAIL {error}", flush=True)
    remaining = producer.flush(120)
    committer.close()
    print(f"DONE {remaining}", flush=True)


def crash_check(bootstrap, prefix):
    """Prints the group's committed offset and every value of the topic, in order."""
    topic, group = f"{prefix}-crash", f"{prefix}-crash-group"
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4", "group.id": group,
        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    [position] = consumer.committed([CkTopicPartition(topic, 0)], timeout=30)
    print(f"COMMITTED {position.offset}", flush=True)
    consumer.assign([CkTopicPartition(topic, 0, 0)])
    deadline, idle_since = time.time() + 60, time.time()
    while time.time() < deadline and time.time() - idle_since < 3:
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        idle_since = time.time()
        print(f"VALUE {message.value().decode()}", flush=True)
    consumer.close()


def main():
    bootstrap, prefix, step = sys.argv[1], sys.argv[2], sys.argv[3]
    if step == "consume":
        consume(bootstrap, prefix)
    elif step == "committed":
        committed(bootstrap, prefix)
    elif step == "crash-load":
        crash_load(bootstrap, prefix)
    elif step == "crash-check":
        crash_check(bootstrap, prefix)
    else:
        sys.exit(f"unknown step {step}")


if __name__ == "__main__":
    main()
