"""Consumer groups of confluent-kafka and kafka-python whose coordinator's broker is killed.

Usage: coordinator_kill.py BOOTSTRAPS TOPIC KILL_COMMAND... -- START_COMMAND...

TOPIC exists with replication factor 3 on a three-node seglog cluster, and so does
__consumer_offsets. The script produces RECORDS records to TOPIC (idempotent, acks=all), then,
for each client in turn, consumes TOPIC in its own group, committing synchronously every
COMMIT_EVERY records. Halfway it asks which broker coordinates the group (DescribeGroups'
coordinator), runs KILL_COMMAND with `{node}` replaced by that broker's id (SIGKILL), and goes on
consuming and committing to the end through the other two brokers. Then it runs START_COMMAND
for the same node and waits until every ISR of TOPIC and __consumer_offsets is whole again, so
that the next client's kill leaves a quorum. It prints one JSON line:

  {"errors": [...], "confluent": {...}, "kafka_python": {...}}

each client's entry with: the node killed; `failover_s`, from the kill to the first commit
acknowledged by the new coordinator; `commits_before` and `commits_after` (acknowledged
commits); `lost` (records of TOPIC the group never received); `duplicated` (received more than
once: at-least-once allows re-reading what was not yet committed); `committed_regressed`
(partitions whose committed offset, read back from the new coordinator, is below the last
acknowledged commit before the kill); `committed_past_end` (committed past the log end);
`committed_short` (the final committed offset below the log end).
"""

import json
import subprocess
import sys
import time
from collections import Counter

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

RECORDS = 3000
COMMIT_EVERY = 100
PARTITIONS = 3


def produce(bootstrap, topic):
    producer = Producer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4", "acks": "all",
        "enable.idempotence": True, "linger.ms": 5})
    failed = []

    def on_delivery(error, _message):
        if error is not None:
            failed.append(str(error))

    for i in range(RECORDS):
        # Keyed, so every partition holds records.
        producer.produce(topic, key=f"k-{i}".encode(), value=f"v-{i}".encode(),
                         on_delivery=on_delivery)
        producer.poll(0)
    if producer.flush(60) or failed:
        raise SystemExit(f"the records were not all acknowledged: {failed[:3]}")


def coordinator_of(admin, group):
    deadline = time.time() + 30
    while True:
        try:
            described = admin.describe_consumer_groups([group])[group].result(timeout=10)
            return described.coordinator.id
        except KafkaException:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def committed(bootstrap, group, topic):
    """The group's committed offsets (its coordinator's answer, retried through a failover)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "broker.address.family": "v4",
                         "group.id": group, "enable.auto.commit": False})
    deadline = time.time() + 60
    try:
        while True:
            try:
                parts = consumer.committed(
                    [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
                return {p.partition: p.offset for p in parts}
            except KafkaException:
                if time.time() > deadline:
                    raise
    finally:
        consumer.close()


def ends(bootstrap, topic):
    consumer = Consumer({"bootstrap.servers": bootstrap, "broker.address.family": "v4",
                         "group.id": "coordinator-kill-ends"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


def whole_isrs(admin, topic):
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            metadata = admin.list_topics(timeout=10)
            topics = [metadata.topics.get(t) for t in (topic, "__consumer_offsets")]
            if all(t is not None and t.error is None and t.partitions
                   and all(len(p.isrs) == 3 and p.leader >= 0 for p in t.partitions.values())
                   for t in topics):
                return
        except KafkaException:
            pass
        time.sleep(0.2)
    raise SystemExit("the ISRs did not become whole again")


class ConfluentGroup:
    def __init__(self, bootstrap, group, topic):
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "broker.address.family": "v4", "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe([topic])

    def poll(self):
        message = self.consumer.poll(0.5)
        if message is None or message.error() is not None:
            return []
        return [message.value().decode()]

    def commit(self):
        try:
            parts = self.consumer.commit(asynchronous=False)
        except KafkaException as error:
            if error.args[0].code() == KafkaError._NO_OFFSET:
                return {}  # nothing consumed since the last commit
            raise
        return {p.partition: p.offset for p in parts or []}

    def close(self):
        self.consumer.close()


class KafkaPythonGroup:
    def __init__(self, bootstrap, group, topic):
        self.consumer = KafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False, request_timeout_ms=10000, retry_backoff_ms=200)

    def poll(self):
        batches = self.consumer.poll(timeout_ms=500, max_records=50)
        return [m.value.decode() for records in batches.values() for m in records]

    def commit(self):
        self.consumer.commit()
        return {tp.partition: self.consumer.committed(tp)
                for tp in self.consumer.assignment()
                if isinstance(tp, KTopicPartition)}

    def close(self):
        self.consumer.close()


def run_group(client, make, bootstrap, topic, kill, start, errors):
    group = f"coordinator-kill-{client}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "broker.address.family": "v4"})
    consumer = make(bootstrap, group, topic)
    seen = Counter()
    since_commit = 0
    acked = {}  # partition -> last acknowledged committed offset
    commits = [0, 0]
    killed = None
    killed_at = None
    failover_s = None
    deadline = time.time() + 100
    while sum(seen.values()) < RECORDS and time.time() < deadline:
        values = consumer.poll()
        for value in values:
            seen[value] += 1
        since_commit += len(values)
        if since_commit >= COMMIT_EVERY or (values and sum(seen.values()) >= RECORDS):
            try:
                acked.update(consumer.commit())
                since_commit = 0
                commits[killed is not None] += 1
                if killed_at is not None and failover_s is None:
                    failover_s = round(time.time() - killed_at, 2)
            except Exception as error:  # noqa: BLE001 - a failed commit is retried
                if killed is None:
                    errors.append(f"{client}: commit before the kill: {error}")
        if killed is None and len(seen) >= RECORDS // 2:
            killed = coordinator_of(admin, group)
            before_kill = dict(acked)
            subprocess.run([a.replace("{node}", str(killed)) for a in kill], check=True,
                           stdout=sys.stderr)
            killed_at = time.time()
    # The last commit is retried until the new coordinator takes it (a commit that failed in
    # the failover left the loop behind).
    final_deadline = time.time() + 60
    while True:
        try:
            acked.update(consumer.commit())
            commits[killed is not None] += 1
            break
        except Exception as error:  # noqa: BLE001 - retried, then reported
            if time.time() > final_deadline:
                errors.append(f"{client}: the last commit: {error}")
                break
            consumer.poll()
    consumer.close()
    end = ends(bootstrap, topic)
    final = committed(bootstrap, group, topic)
    subprocess.run([a.replace("{node}", str(killed)) for a in start], check=True,
                   stdout=sys.stderr)
    whole_isrs(admin, topic)
    values = {f"v-{i}" for i in range(RECORDS)}
    return {
        "killed": killed,
        "failover_s": failover_s,
        "commits_before": commits[0],
        "commits_after": commits[1],
        "lost": len(values - set(seen)),
        "duplicated": sum(n - 1 for n in seen.values() if n > 1),
        "committed_regressed": sorted(p for p, o in before_kill.items() if final.get(p, -1) < o),
        "committed_past_end": sorted(p for p, o in final.items() if o > end[p]),
        # A partition without records has no committed offset (-1001) either.
        "committed_short": sorted(p for p, o in final.items() if o < end[p] and end[p] > 0),
        "acked_commits": {str(p): o for p, o in sorted(acked.items())},
        "committed": {str(p): o for p, o in sorted(final.items())},
        "ends": {str(p): o for p, o in sorted(end.items())},
    }


def main():
    bootstrap, topic = sys.argv[1:3]
    rest = sys.argv[3:]
    split = rest.index("--")
    kill, start = rest[:split], rest[split + 1:]
    produce(bootstrap, topic)
    errors = []
    summary = {"errors": errors}
    for client, make in (("confluent", ConfluentGroup), ("kafka_python", KafkaPythonGroup)):
        summary[client] = run_group(client, make, bootstrap, topic, kill, start, errors)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
