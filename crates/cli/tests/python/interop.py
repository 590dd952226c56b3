"""Produce and consume through kafka-python and confluent-kafka against `seglog serve`.

Usage: interop.py BOOTSTRAP TOPIC_PREFIX

Each client creates its topic through its admin API, produces 100 records with every codec
(acks=all), then consumes them back from the beginning; each client then reads what the other
wrote. Exits non-zero with a message on the first mismatch.
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic as CkNewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 100


def expected(client):
    return [f"{client}-{codec}-{i}" for codec in CODECS for i in range(PER_CODEC)]


def kafka_python_produce(bootstrap, topic):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    inferred = admin.config["api_version"] or admin._client.check_version()
    if inferred < BROKER_VERSION_MIN:
        sys.exit(f"KafkaAdminClient infers broker version {inferred}, want {BROKER_VERSION_MIN}")
    print(f"KafkaAdminClient infers broker version {'.'.join(map(str, inferred))}")
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    for codec in CODECS:
        # kafka-python's defaults, idempotence included (InitProducerId, sequence checks).
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            compression_type=None if codec == "none" else codec,
        )
        futures = [
            producer.send(topic, key=str(i).encode(), value=f"kafka-python-{codec}-{i}".encode())
            for i in range(PER_CODEC)
        ]
        producer.flush()
        for future in futures:
            future.get(timeout=30)
        producer.close()


# kafka-python infers the broker's release from its ApiVersions answer (the newest release
# whose marker API version is advertised: 4.1 is Produce v13) and turns off what older releases
# lack; seglog advertises Kafka 4.1's versions.
BROKER_VERSION_MIN = (4, 1)


def kafka_python_consume(bootstrap, topic, n):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=5000)
    inferred = consumer.config["api_version"]
    if inferred < BROKER_VERSION_MIN:
        sys.exit(f"kafka-python infers broker version {inferred}, want {BROKER_VERSION_MIN} or later")
    print(f"kafka-python infers broker version {'.'.join(map(str, inferred))}")
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    values = []
    deadline = time.time() + 60
    while len(values) < n and time.time() < deadline:
        for message in consumer:
            values.append(message.value.decode())
            if len(values) >= n:
                break
    consumer.close()
    return values


def confluent_produce(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([CkNewTopic(topic, 1, 1)]).values():
        future.result()
    errors = []
    for codec in CODECS:
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "compression.type": codec,
                "enable.idempotence": True,
            }
        )
        for i in range(PER_CODEC):
            producer.produce(
                topic,
                key=str(i),
                value=f"confluent-kafka-{codec}-{i}",
                on_delivery=lambda error, _message: errors.append(error) if error else None,
            )
        remaining = producer.flush(30)
        if remaining or errors:
            sys.exit(f"confluent-kafka: {remaining} undelivered, errors {errors[:3]}")


def confluent_consume(bootstrap, topic, n):
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "interop", "enable.auto.commit": False}
    )
    consumer.assign([CkTopicPartition(topic, 0, OFFSET_BEGINNING)])
    values = []
    deadline = time.time() + 60
    while len(values) < n and time.time() < deadline:
        message = consumer.poll(1.0)
        if message is None:
            continue
        if message.error():
            sys.exit(f"confluent-kafka consume error: {message.error()}")
        values.append(message.value().decode())
    consumer.close()
    return values


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {len(got)} values, want {len(want)}; first difference at "
                 f"{next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))}")
    print(f"{what}: {len(got)} records in order")


def main():
    bootstrap, prefix = sys.argv[1], sys.argv[2]
    kp_topic, ck_topic = f"{prefix}-kafka-python", f"{prefix}-confluent"
    kafka_python_produce(bootstrap, kp_topic)
    confluent_produce(bootstrap, ck_topic)
    n = len(CODECS) * PER_CODEC
    check("kafka-python reads kafka-python", kafka_python_consume(bootstrap, kp_topic, n), expected("kafka-python"))
    check("confluent-kafka reads confluent-kafka", confluent_consume(bootstrap, ck_topic, n), expected("confluent-kafka"))
    check("kafka-python reads confluent-kafka", kafka_python_consume(bootstrap, ck_topic, n), expected("confluent-kafka"))
    check("confluent-kafka reads kafka-python", confluent_consume(bootstrap, kp_topic, n), expected("kafka-python"))


if __name__ == "__main__":
    main()
