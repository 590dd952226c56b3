"""A producer for the restart tests: confluent-kafka with acks=all against `seglog serve`.

Usage:
  restart.py BOOTSTRAP TOPIC          produce until killed
  restart.py BOOTSTRAP TOPIC fill     produce 1 KiB records until the broker's disk is full

Produces `v-000000`, `v-000001`, ... to partition 0 of TOPIC (auto-created) until it is killed,
printing `ACK <value> <offset>` for every record the broker acknowledged. The test kills the
broker with SIGKILL part-way, then kills this process, so nothing is produced after the
restart; every ACK line is a record the broker must serve afterwards.

`fill`: 16,000 records of 1 KiB, with no retries, so that a failed produce reaches the
application with the broker's error code: prints `ACK <value prefix>` for each acknowledged one
and, at the end, `ERROR <name> <count>` for each error the deliveries failed with.
"""

import collections

import sys
import time

from confluent_kafka import Producer

RECORDS_MAX = 1_000_000


def main(bootstrap, topic):
    producer = Producer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4", "acks": "all",
        "linger.ms": 2, "enable.idempotence": False})

    def on_delivery(error, message):
        if error is None:
            print(f"ACK {message.value().decode()} {message.offset()}", flush=True)

    for i in range(RECORDS_MAX):
        while True:
            try:
                producer.produce(topic, value=f"v-{i:06d}".encode(), partition=0,
                                 on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        if i % 50 == 49:
            time.sleep(0.01)
    producer.flush(60)


def fill(bootstrap, topic):
    producer = Producer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4", "acks": "all",
        "linger.ms": 5, "retries": 0, "enable.idempotence": False,
        # Once the directory is offline its partition has no leader, and the client holds the
        # rest until they time out (as with Kafka): 10 s, not the default 300 s.
        "message.timeout.ms": 10000})
    errors = collections.Counter()

    def on_delivery(error, message):
        if error is None:
            print(f"ACK {message.value()[:8].decode()}", flush=True)
        else:
            errors[error.name()] += 1

    for i in range(16_000):
        value = f"v-{i:06d}".encode() + b"x" * 1016
        while True:
            try:
                producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)
    for name, count in sorted(errors.items()):
        print(f"ERROR {name} {count}", flush=True)


if __name__ == "__main__":
    if sys.argv[3:] == ["fill"]:
        fill(sys.argv[1], sys.argv[2])
    else:
        main(sys.argv[1], sys.argv[2])
