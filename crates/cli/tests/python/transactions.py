"""Transactions through kafka-python and confluent-kafka against `seglog serve`.

Usage:
  transactions.py BOOTSTRAP TOPIC

One topic of 3 partitions. Two transactional producers, one per library, run at the same time
(their transactions interleave in the same partitions). Each runs TRANSACTIONS transactions of
one record per partition; transaction n is aborted when n % 3 == 1 and committed otherwise.
Values are `<lib>-c-<n>-<p>` (committed) and `<lib>-a-<n>-<p>` (aborted). After a
commit_transaction or abort_transaction returns, the script prints `COMMITTED <value>` or
`ABORTED <value>` for each of its values.

Fencing, per library: producer 1 with transactional id `<TOPIC>-<lib>-fence` begins a
transaction, sends `<lib>-f-<p>` and flushes (the records are in the log); producer 2 with the
same id calls init_transactions (which bumps the epoch and aborts producer 1's transaction);
producer 1's next operation (commit_transaction) must fail with a fatal/fenced error: prints
`FENCED <lib> <error> fatal=<bool>` (or `NOT-FENCED <lib>` when it succeeds); producer 1's
values print as `ABORTED`. Producer 2 then commits `<lib>-g-<p>` (printed `COMMITTED`).

Then four consumers read the topic from the start to its end (each library with
read_committed and with read_uncommitted), printing `READ <lib> <isolation> <value>` for every
record, and `END <lib> <isolation> <count>` when every partition is read to its end. The test
computes the sets: read_committed is exactly the committed values, each once; read_uncommitted
is every value, each once.
"""

import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
TRANSACTIONS = 30
READ_LIMIT_S = 60.0

LOCK = threading.Lock()


def say(line):
    with LOCK:
        print(line, flush=True)


def confluent_producer(bootstrap, transactional_id):
    return Producer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4",
        "transactional.id": transactional_id, "linger.ms": 1})


def kafka_python_producer(bootstrap, transactional_id):
    from kafka import KafkaProducer
    return KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id,
                         linger_ms=1)


class Library:
    """The few producer calls both libraries have, under one name."""

    def __init__(self, name, bootstrap):
        self.name, self.bootstrap = name, bootstrap

    def producer(self, transactional_id):
        if self.name == "confluent-kafka":
            producer = confluent_producer(self.bootstrap, transactional_id)
            producer.init_transactions(30)
        else:
            producer = kafka_python_producer(self.bootstrap, transactional_id)
            producer.init_transactions()
        return producer

    def send(self, producer, topic, value, partition):
        if self.name == "confluent-kafka":
            producer.produce(topic, value=value.encode(), partition=partition)
        else:
            producer.send(topic, value=value.encode(), partition=partition)

    def flush(self, producer):
        if self.name == "confluent-kafka":
            remaining = producer.flush(30)
            assert remaining == 0, f"{remaining} records not delivered"
        else:
            producer.flush(timeout=30)

    def close(self, producer):
        if self.name == "kafka-python":
            producer.close(timeout=10)


def short(library):
    return {"confluent-kafka": "ck", "kafka-python": "kp"}[library.name]


def transactions(library, topic):
    producer = library.producer(f"{topic}-{library.name}")
    for n in range(TRANSACTIONS):
        kind = "a" if n % 3 == 1 else "c"
        values = [f"{short(library)}-{kind}-{n}-{p}" for p in range(PARTITIONS)]
        producer.begin_transaction()
        for p, value in enumerate(values):
            library.send(producer, topic, value, p)
        if kind == "a":
            # Flushed first, so the aborted records are in the log (read_uncommitted sees them).
            library.flush(producer)
            producer.abort_transaction()
            for value in values:
                say(f"ABORTED {value}")
        else:
            producer.commit_transaction()
            for value in values:
                say(f"COMMITTED {value}")
    library.close(producer)


def fencing(library, topic):
    transactional_id = f"{topic}-{library.name}-fence"
    first = library.producer(transactional_id)
    first.begin_transaction()
    values = [f"{short(library)}-f-{p}" for p in range(PARTITIONS)]
    for p, value in enumerate(values):
        library.send(first, topic, value, p)
    library.flush(first)
    second = library.producer(transactional_id)
    for value in values:
        say(f"ABORTED {value}")
    try:
        first.commit_transaction()
        say(f"NOT-FENCED {library.name}")
    except KafkaException as error:
        kafka_error = error.args[0]
        say(f"FENCED {library.name} {kafka_error.name()} fatal={kafka_error.fatal()}")
    except Exception as error:  # kafka-python's errors (KafkaError subclasses)
        fatal = not getattr(error, "retriable", False)
        say(f"FENCED {library.name} {type(error).__name__} fatal={fatal}")
    try:
        library.close(first)
    except Exception:  # noqa: BLE001 (a fenced producer may fail to close; nothing to check)
        pass
    second.begin_transaction()
    values = [f"{short(library)}-g-{p}" for p in range(PARTITIONS)]
    for p, value in enumerate(values):
        library.send(second, topic, value, p)
    second.commit_transaction()
    for value in values:
        say(f"COMMITTED {value}")
    library.close(second)


def read_confluent(bootstrap, topic, isolation):
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4",
        "group.id": f"{topic}-reader", "enable.auto.commit": False,
        "isolation.level": isolation, "enable.partition.eof": True})
    consumer.assign([CkTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    at_end, count, deadline = set(), 0, time.time() + READ_LIMIT_S
    while len(at_end) < PARTITIONS:
        if time.time() > deadline:
            sys.exit(f"confluent-kafka {isolation}: partitions at end {at_end} after "
                     f"{READ_LIMIT_S} s ({count} records)")
        message = consumer.poll(0.2)
        if message is None:
            continue
        if message.error():
            if message.error().code() == -191:  # _PARTITION_EOF
                at_end.add(message.partition())
                continue
            sys.exit(f"confluent-kafka {isolation}: {message.error()}")
        count += 1
        say(f"READ confluent-kafka {isolation} {message.value().decode()}")
    consumer.close()
    say(f"END confluent-kafka {isolation} {count}")


def read_kafka_python(bootstrap, topic, isolation):
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    # The end: the last stable offset for read_committed, the high watermark otherwise
    # (ListOffsets with the consumer's isolation level).
    end = consumer.end_offsets(partitions)
    count, deadline = 0, time.time() + READ_LIMIT_S
    while any(consumer.position(tp) < end[tp] for tp in partitions):
        if time.time() > deadline:
            positions = {tp.partition: consumer.position(tp) for tp in partitions}
            sys.exit(f"kafka-python {isolation}: positions {positions} short of {end} after "
                     f"{READ_LIMIT_S} s ({count} records)")
        for messages in consumer.poll(timeout_ms=200).values():
            for message in messages:
                count += 1
                say(f"READ kafka-python {isolation} {message.value.decode()}")
    consumer.close()
    say(f"END kafka-python {isolation} {count}")


def run_all(targets):
    """Runs each (function, args) in its own thread; exits with every failure."""
    failures = []

    def run(function, args):
        try:
            function(*args)
        except BaseException as error:  # noqa: BLE001 (every failure is reported below)
            failures.append(f"{function.__name__}{args[1:]}: {error!r}")

    threads = [threading.Thread(target=run, args=target) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        sys.exit("\n".join(failures))


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap, "broker.address.family": "v4"})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(30)
    libraries = [Library(name, bootstrap) for name in ("kafka-python", "confluent-kafka")]
    # Both producers at once: their transactions interleave in every partition.
    run_all([(transactions, (library, topic)) for library in libraries])
    run_all([(fencing, (library, topic)) for library in libraries])
    run_all([(read, (bootstrap, topic, isolation))
             for read in (read_kafka_python, read_confluent)
             for isolation in ("read_committed", "read_uncommitted")])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
