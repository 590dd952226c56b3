"""Produce to and consume from many partitions of one wide topic through a real client.

Usage:
  wide.py BOOTSTRAP TOPIC PARTITIONS SAMPLE SEED

Picks SAMPLE distinct partitions of TOPIC (which has PARTITIONS) at random (seeded), produces
three records to each with confluent-kafka (acks=all, idempotence on), then reads every picked
partition back from offset 0 with one consumer assigned to all of them. Checks that each
partition holds exactly its three records, in order, and nothing else, and that Metadata lists
every partition. Fails after 180 s. Prints what it saw.
"""

import random
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

DEADLINE_S = 180.0


def main(bootstrap, topic, n_partitions, sample, seed):
    picked = random.Random(seed).sample(range(n_partitions), sample)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    listed = producer.list_topics(topic, timeout=60).topics[topic]
    if listed.error is not None or len(listed.partitions) != n_partitions:
        raise SystemExit(f"Metadata lists {len(listed.partitions)} partitions of {topic} "
                         f"(error {listed.error}), want {n_partitions}")
    errors = []
    for p in picked:
        for i in range(3):
            producer.produce(topic, value=f"{p}-{i}".encode(), partition=p,
                             on_delivery=lambda err, msg: err and errors.append(err))
        producer.poll(0)
    left = producer.flush(60)
    if left or errors:
        raise SystemExit(f"{left} records undelivered, errors: {errors[:5]}")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wide-check",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    consumer.assign([TopicPartition(topic, p, 0) for p in picked])
    seen = {p: [] for p in picked}
    deadline = time.monotonic() + DEADLINE_S
    while sum(len(v) for v in seen.values()) < 3 * sample:
        if time.monotonic() > deadline:
            short = [p for p, v in seen.items() if len(v) < 3]
            raise SystemExit(f"timed out: {len(short)} partitions short, e.g. {short[:5]}")
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            raise SystemExit(f"consumer error: {msg.error()}")
        seen[msg.partition()].append((msg.offset(), msg.value().decode()))
    consumer.close()
    for p, records in seen.items():
        want = [(i, f"{p}-{i}") for i in range(3)]
        if records != want:
            raise SystemExit(f"partition {p}: {records}, want {want}")
    print(f"{sample} partitions of {n_partitions}: 3 records each produced and read back")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
