"""A producer for the restart tests: confluent-kafka with acks=all against `seglog serve`.

Usage:
  restart.py BOOTSTRAP TOPIC

Produces `v-000000`, `v-000001`, ... to partition 0 of TOPIC (auto-created) until it is killed,
printing `ACK <value> <offset>` for every record the broker acknowledged. The test kills the
broker with SIGKILL part-way, then kills this process, so nothing is produced after the
restart; every ACK line is a record the broker must serve afterwards.
"""

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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
