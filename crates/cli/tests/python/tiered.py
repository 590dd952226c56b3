"""Tiered storage through real clients: produce to five tiered topics (one per codec), then
read everything back from offset 0 with kafka-python and with confluent-kafka (librdkafka),
both checking every batch's CRC as they decode it.

Usage: tiered.py BOOTSTRAP produce RECORDS_PER_TOPIC
       tiered.py BOOTSTRAP consume RECORDS_PER_TOPIC

`produce` creates the topics (remote.storage.enable, 1 MiB segments, two segments kept
locally) and prints "produced TOPIC N" for each. `consume` prints "kafka-python TOPIC N" and
"confluent-kafka TOPIC N" after checking that the N records are the ones produced, in order,
each once. Exits non-zero with a message on the first mismatch.
"""

import hashlib
import sys
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CONFIGS = {
    "remote.storage.enable": "true",
    "segment.bytes": "1048576",
    "local.retention.bytes": "2097152",
}


def topic(codec):
    return f"tiered-{codec}"


def value(codec, i):
    # About 140 bytes, most of them incompressible, so that every codec's topic fills more
    # segments than local retention keeps.
    seed = f"{codec}-{i}".encode()
    noise = hashlib.blake2b(seed, digest_size=64).digest()
    return seed + b"-" + noise + hashlib.blake2b(noise, digest_size=64).digest()


def produce(bootstrap, n):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic(codec), 1, 1, config=CONFIGS) for codec in CODECS]
    )
    for future in futures.values():
        future.result(30)
    for codec in CODECS:
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "compression.codec": codec,
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )
        errors = []

        def delivered(error, _message):
            if error is not None:
                errors.append(error)

        for i in range(n):
            while True:
                try:
                    producer.produce(topic(codec), key=str(i).encode(), value=value(codec, i), on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        if producer.flush(60) != 0 or errors:
            sys.exit(f"{topic(codec)}: {len(errors)} delivery errors, first {errors[:1]}")
        print(f"produced {topic(codec)} {n}", flush=True)


def check(client, codec, values, n):
    want = [value(codec, i) for i in range(n)]
    if values != want:
        first = next((i for i, (a, b) in enumerate(zip(values, want)) if a != b), min(len(values), n))
        sys.exit(f"{client} {topic(codec)}: {len(values)} records, first difference at {first}")
    print(f"{client} {topic(codec)} {n}", flush=True)


def kafka_python_consume(bootstrap, codec, n):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, check_crcs=True, enable_auto_commit=False)
    tp = TopicPartition(topic(codec), 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    values = []
    deadline = time.monotonic() + 300
    while len(values) < n and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            for record in records:
                if record.offset != len(values):
                    sys.exit(f"kafka-python {topic(codec)}: offset {record.offset} at {len(values)}")
                values.append(record.value)
    consumer.close()
    check("kafka-python", codec, values, n)


def confluent_consume(bootstrap, codec, n):
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"tiered-check-{codec}",
            "enable.auto.commit": False,
            "check.crcs": True,
            "auto.offset.reset": "error",
        }
    )
    consumer.assign([CkTopicPartition(topic(codec), 0, 0)])
    values = []
    deadline = time.monotonic() + 300
    while len(values) < n and time.monotonic() < deadline:
        for message in consumer.consume(num_messages=10000, timeout=1.0):
            if message.error() is not None:
                sys.exit(f"confluent-kafka {topic(codec)}: {message.error()}")
            if message.offset() != len(values):
                sys.exit(f"confluent-kafka {topic(codec)}: offset {message.offset()} at {len(values)}")
            values.append(message.value())
    consumer.close()
    check("confluent-kafka", codec, values, n)


def main():
    bootstrap, step, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if step == "produce":
        produce(bootstrap, n)
    elif step == "consume":
        for codec in CODECS:
            kafka_python_consume(bootstrap, codec, n)
            confluent_consume(bootstrap, codec, n)
    else:
        sys.exit(f"unknown step {step}")


if __name__ == "__main__":
    main()
