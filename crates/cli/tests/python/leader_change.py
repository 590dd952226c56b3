"""kafka-python and confluent-kafka through a leader change in a seglog cluster.

Usage: leader_change.py BOOTSTRAP_A BOOTSTRAP_B TOPIC STOP_COMMAND... -- START_COMMAND...

Both clients produce to TOPIC (which exists, led by several brokers) through BOOTSTRAP_A,
idempotently with acks=all: confluent-kafka the values `c-0` .. `c-599`, kafka-python `k-0` ..
`k-599`, about 100 a second each. After a second the script runs STOP_COMMAND (a controlled
shutdown of a leader's node) and START_COMMAND (its restart), while the producers go on. Then it
consumes the topic in a group through BOOTSTRAP_B with each client, asks the metadata quorum
through BOOTSTRAP_B (kafka-python's DescribeQuorum), and prints one JSON line:

  {"errors": [...], "confluent": {"lost": n, "duplicated": n}, "kafka_python": {...},
   "consumed_by": {"confluent": n, "kafka_python": n}, "stop_s": s, "start_s": s,
   "quorum": {"leader_id": n, "high_watermark": n, "voters": {id: log end offset}}}

`errors` holds every delivery error either producer reported (after its retries): a client that
follows the leader change has none.
"""

import json
import subprocess
import sys
import threading
import time
from collections import Counter

from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient

RECORDS = 600


def produce_confluent(bootstrap, topic, errors):
    producer = Producer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4", "acks": "all",
        "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 120000})

    def on_delivery(error, _message):
        if error is not None:
            errors.append(f"confluent: {error}")

    for i in range(RECORDS):
        producer.produce(topic, key=f"c-{i}".encode(), value=f"c-{i}".encode(),
                         on_delivery=on_delivery)
        producer.poll(0)
        time.sleep(0.01)
    left = producer.flush(120)
    if left:
        errors.append(f"confluent: {left} records not delivered")


def produce_kafka_python(bootstrap, topic, errors):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                             linger_ms=5, retries=1000000, retry_backoff_ms=200,
                             request_timeout_ms=10000, delivery_timeout_ms=120000)
    futures = []
    for i in range(RECORDS):
        futures.append(producer.send(topic, key=f"k-{i}".encode(), value=f"k-{i}".encode()))
        time.sleep(0.01)
    producer.flush(120)
    for future in futures:
        try:
            future.get(timeout=1)
        except Exception as error:  # noqa: BLE001 - every failure is reported
            errors.append(f"kafka-python: {type(error).__name__}: {error}")
    producer.close()


def consume_confluent(bootstrap, topic, want):
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4",
        "group.id": "leader-change-confluent", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen = Counter()
    deadline = time.time() + 60
    while sum(seen.values()) < want and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen[message.value().decode()] += 1
    consumer.close()
    return seen


def consume_kafka_python(bootstrap, topic, want):
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap,
                             group_id="leader-change-kafka-python",
                             auto_offset_reset="earliest", consumer_timeout_ms=60000)
    seen = Counter()
    for message in consumer:
        seen[message.value.decode()] += 1
        if sum(seen.values()) >= want:
            break
    consumer.close()
    return seen


def judge(seen, prefix):
    values = {f"{prefix}-{i}" for i in range(RECORDS)}
    return {
        "lost": len(values - set(seen)),
        "duplicated": sum(n - 1 for v, n in seen.items() if v in values and n > 1),
    }


def main():
    bootstrap_a, bootstrap_b, topic = sys.argv[1:4]
    rest = sys.argv[4:]
    split = rest.index("--")
    stop_command, start_command = rest[:split], rest[split + 1:]
    errors = []
    producers = [
        threading.Thread(target=produce_confluent, args=(bootstrap_a, topic, errors)),
        threading.Thread(target=produce_kafka_python, args=(bootstrap_a, topic, errors)),
    ]
    for thread in producers:
        thread.start()
    time.sleep(1)
    started = time.time()
    subprocess.run(stop_command, check=True, stdout=sys.stderr)
    stop_s = time.time() - started
    started = time.time()
    subprocess.run(start_command, check=True, stdout=sys.stderr)
    start_s = time.time() - started
    for thread in producers:
        thread.join()
    confluent = consume_confluent(bootstrap_b, topic, 2 * RECORDS)
    kafka_python = consume_kafka_python(bootstrap_b, topic, 2 * RECORDS)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_b)
    described = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
    admin.close()
    quorum = {
        "leader_id": described["leader_id"], "high_watermark": described["high_watermark"],
        "voters": {str(v["replica_id"]): v["log_end_offset"]
                   for v in described["current_voters"]},
    }
    print(json.dumps({
        "errors": errors,
        "confluent": judge(confluent, "c") | {"other_client": judge(confluent, "k")},
        "kafka_python": judge(kafka_python, "k") | {"other_client": judge(kafka_python, "c")},
        "consumed_by": {"confluent": sum(confluent.values()),
                        "kafka_python": sum(kafka_python.values())},
        "stop_s": round(stop_s, 2), "start_s": round(start_s, 2), "quorum": quorum,
    }), flush=True)


if __name__ == "__main__":
    main()
