"""Log compaction through real clients against `seglog serve`.

Usage:
  compaction.py BOOTSTRAP TOPIC keyed      produce, then wait for the cleaner, then check
  compaction.py BOOTSTRAP PREFIX commit    100,000 offset commits over 1,000 groups
  compaction.py BOOTSTRAP PREFIX committed after a restart: every group's last commit

`keyed`: a topic with `cleanup.policy=compact`, 64 KiB segments and `delete.retention.ms` of 2 s
gets 200,000 keyed records over 2,000 keys (confluent-kafka 150,000, kafka-python 50,000),
overwrites throughout; a last pass writes each key once more, a tombstone for every tenth key;
filler records with keys of their own then push that pass out of the active segment (the
cleaner never cleans it). A consumer from the beginning is then read until it sees exactly
one record per key, each key's last value, in offset order, and no tombstone (new filler keeps
the log dirty, so the cleaner runs again once the tombstones' horizon has passed). Fails after
120 s. Prints what it saw.
"""

import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

KEYS = 2_000
CONFLUENT_RECORDS = 150_000
KAFKA_PYTHON_RECORDS = 50_000
DEADLINE_S = 120.0


def keyed(bootstrap, topic):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs={
        "cleanup.policy": "compact",
        "segment.bytes": "65536",
        "delete.retention.ms": "2000",
        "min.cleanable.dirty.ratio": "0.1",
    })])
    admin.close()
    expected = {}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "broker.address.family": "v4", "enable.idempotence": True})
    for i in range(CONFLUENT_RECORDS):
        key, value = f"key-{i % KEYS}", f"confluent-{i}"
        while True:
            try:
                producer.produce(topic, key=key, value=value)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        expected[key] = value
    if producer.flush(60) != 0:
        sys.exit("confluent-kafka did not deliver every record")
    python_producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for i in range(KAFKA_PYTHON_RECORDS):
        key, value = f"key-{(i * 7) % KEYS}", f"kafka-python-{i}"
        python_producer.send(topic, key=key.encode(), value=value.encode())
        expected[key] = value
    python_producer.flush(60)
    # The last pass: each key once more, every tenth a tombstone.
    for k in range(KEYS):
        key = f"key-{k}"
        value = None if k % 10 == 0 else f"last-{k}"
        python_producer.send(topic, key=key.encode(), value=value and value.encode())
        expected[key] = value
    filler = 0

    def add_filler(n):
        nonlocal filler
        for _ in range(n):
            key, value = f"filler-{filler}", "x" * 100
            python_producer.send(topic, key=key.encode(), value=value.encode())
            expected[key] = value
            filler += 1
        python_producer.flush(60)

    add_filler(2_000)
    live = {key: value for key, value in expected.items() if value is not None}
    print(f"produced {CONFLUENT_RECORDS + KAFKA_PYTHON_RECORDS + KEYS + filler} records, "
          f"{len(live)} live keys", flush=True)
    started = time.time()
    seen_clean = None
    while True:
        records = consume_all(bootstrap, topic)
        keys = [key for key, _, _ in records]
        offsets = [offset for _, _, offset in records]
        view = {key: value for key, value, _ in records}
        live = {key: value for key, value in expected.items() if value is not None}
        one_each = len(keys) == len(set(keys))
        if one_each and seen_clean is None:
            seen_clean = time.time() - started
            print(f"one record per key after {seen_clean:.1f} s ({len(records)} records)",
                  flush=True)
        if one_each and view == live and offsets == sorted(offsets):
            print(f"exactly the last value of each live key, no tombstone, in offset order, "
                  f"after {time.time() - started:.1f} s: {len(records)} records", flush=True)
            return
        if time.time() - started > DEADLINE_S:
            tombstones = sum(1 for _, value, _ in records if value is None)
            wrong = sum(1 for key, value in view.items() if live.get(key) != value)
            sys.exit(f"not compacted after {DEADLINE_S} s: {len(records)} records, "
                     f"{len(keys) - len(set(keys))} duplicates, {tombstones} tombstones, "
                     f"{wrong} keys with a value other than their last")
        # Keep the log dirty, so that the cleaner comes back once the horizon has passed.
        add_filler(200)


def consume_all(bootstrap, topic):
    """Every record from the beginning to the end of the log: (key, value, offset)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "enable.partition.eof": True, "broker.address.family": "v4"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    records = []
    while True:
        message = consumer.poll(10)
        if message is None:
            break
        if message.error():
            if message.error().code() == -191:  # _PARTITION_EOF
                break
            sys.exit(f"consumer: {message.error()}")
        value = message.value()
        records.append((message.key().decode(), value.decode() if value is not None else None,
                        message.offset()))
    consumer.close()
    return records


def in_sixteen_threads(work):
    """`work(groups)` in 16 threads, over the 1,000 group numbers between them."""
    threads = [threading.Thread(target=work, args=(range(t, 1_000, 16),)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def commit(bootstrap, prefix):
    topic = f"{prefix}-committed"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    counts, failures = [], []

    def commit_groups(groups):
        n = 0
        try:
            for g in groups:
                consumer = Consumer({"bootstrap.servers": bootstrap,
                                     "group.id": f"{prefix}-group-{g}",
                                     "enable.auto.commit": False, "broker.address.family": "v4"})
                # The coordinator first. librdkafka defers a commit made before it knows the
                # group's coordinator, and once it does it puts the deferred commits *behind*
                # the newer ones still queued (rdkafka_cgrp.c: rd_kafka_q_concat of
                # rkcg_wait_coord_q onto rkcg_ops), so the broker would be sent commit 49
                # after commit 100 + g and rightly keep 49 (seen under load: the log held
                # the group's commits in that order).
                consumer.committed([TopicPartition(topic, 0)], timeout=30)
                for offset in range(1, 100):
                    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=True)
                    n += 1
                consumer.commit(offsets=[TopicPartition(topic, 0, 100 + g)], asynchronous=False)
                n += 1
                consumer.close()
        except Exception as error:  # noqa: BLE001 (reported below)
            failures.append(repr(error))
        counts.append(n)

    # Sixteen clients at a time, as many applications commit at once.
    in_sixteen_threads(commit_groups)
    if failures:
        sys.exit("\n".join(failures))
    print(f"committed {sum(counts)} offsets over 1000 groups", flush=True)


def committed(bootstrap, prefix):
    topic = f"{prefix}-committed"
    wrong = []

    def check(groups):
        for g in groups:
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}-group-{g}",
                                 "enable.auto.commit": False, "broker.address.family": "v4"})
            [position] = consumer.committed([TopicPartition(topic, 0)], timeout=30)
            consumer.close()
            if position.offset != 100 + g:
                wrong.append(f"group {g}: committed {position.offset}, want {100 + g}")

    in_sixteen_threads(check)
    if wrong:
        sys.exit(f"{len(wrong)} groups lost their last commit: {wrong[:10]}")
    print("every group's last commit survived the restart", flush=True)


STEPS = {"keyed": keyed, "commit": commit, "committed": committed}


def main():
    bootstrap, name, step = sys.argv[1], sys.argv[2], sys.argv[3]
    if step not in STEPS:
        sys.exit(f"unknown step {step}")
    STEPS[step](bootstrap, name)


if __name__ == "__main__":
    main()
