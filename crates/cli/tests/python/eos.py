"""Exactly-once consume-transform-produce with confluent-kafka against `seglog serve`, for a
Jepsen-style checker: the test kills the broker with SIGKILL while `loop` runs.

Usage:
  eos.py BOOTSTRAP PREFIX fill N   create PREFIX-in and PREFIX-out (4 partitions each) and
                                   produce `in-<k>` for k in 0..N to PREFIX-in (partition k % 4)
  eos.py BOOTSTRAP PREFIX loop [BATCH [SEED]]
                                   the EOS loop, until every input record is processed, with
                                   at most BATCH records a transaction (200); SEED (0) picks
                                   the transactions it aborts on purpose
  eos.py BOOTSTRAP PREFIX check    print what a checker needs (below)

`loop`: a consumer in group PREFIX-group (isolation.level=read_committed, no auto commit)
subscribed to PREFIX-in and a transactional producer (transactional.id PREFIX-eos). Each
transaction consumes a batch, produces `out-<k> txn=<txn>` for each `in-<k>` to the same
partition of PREFIX-out, sends the consumer's positions with its group metadata
(send_offsets_to_transaction) and commits; one transaction in 8 (seeded) is aborted on
purpose instead, after its records are flushed to the broker (so the log holds them), half
before and half after send_offsets_to_transaction. `<txn>` is `<run>/<n>`: the producer's incarnation
and the transaction's number. It prints, one line each, flushed:

  RUN <run>                     a producer was created and init_transactions returned
  PHASE <txn> <phase>           the transaction reached produce, offsets or commit
  COMMITTED <txn> <count>       commit_transaction returned: <count> records are committed
  ABORTED <txn> <count> <why>   the transaction can never commit: abort_transaction returned,
                                or the producer failed (or blocked past HANG_S: `client-hang`)
                                before it asked to commit (the next incarnation's
                                init_transactions aborts it)
  UNKNOWN <txn> <count> <why>   commit_transaction failed fatally or blocked past HANG_S:
                                committed or not, all or nothing
  ERROR <what> <error>          a retried error (diagnostics)
  DONE <transactions>           the group's committed offsets reached every input log end

After an abort, or with a new producer, the consumer is rewound to the group's committed
offsets (OffsetFetch with require_stable, as librdkafka asks for read_committed).

`check`: reads PREFIX-in and PREFIX-out from the start to their ends and prints
  IN <partition> <offset> <k>                  every input record
  OUT <partition> <offset> <k> <txn>           every output record read_committed
  RAW <partition> <offset> <k> <txn>           every output record read_uncommitted
  END <topic> <partition> <committed end> <uncommitted end>
  GROUP-OFFSET <partition> <offset>            the group's committed offset (-1001: none)
"""

import os
import random
import sys
import threading
import time

from confluent_kafka import (OFFSET_BEGINNING, OFFSET_INVALID, Consumer, KafkaError,
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

SETTLE_S = 30.0
PARTITIONS = 4
BATCH_DEFAULT = 200
LOOP_LIMIT_S = float(os.environ.get("EOS_LOOP_LIMIT_S", "900"))
OP_TIMEOUT_S = 30.0

# Reconnect quickly to a restarted broker (the default backs off to 10 s).
#
# Against one broker, no re-bootstrap (KIP-899): with the only broker down, librdkafka 2.16
# re-bootstraps and decommissions broker 1, and a send_offsets_to_transaction then waits
# forever on the decommissioned group coordinator, past its timeout (librdkafka issues #5511
# and #5456).
#
# Against a cluster (several bootstrap servers), librdkafka's default re-bootstrap, soon: a
# broker absent from Metadata (fenced while cut off, as Kafka leaves fenced brokers out) is
# decommissioned by the client, and with flapping partitions a client came to know one broker
# whose handle was being destroyed ("No brokers available ... (1 broker(s) known)") and, without
# re-bootstrapping, never learned of another: its consumer stopped for good.
CLUSTER = "," in (sys.argv[1] if len(sys.argv) > 1 else "")
COMMON = {"broker.address.family": "v4", "reconnect.backoff.max.ms": 500,
          "retry.backoff.max.ms": 500,
          **({"metadata.recovery.strategy": "rebootstrap",
              "metadata.recovery.rebootstrap.trigger.ms": 10000} if CLUSTER
             else {"metadata.recovery.strategy": "none"})}


# When the loop must be done (LOOP_LIMIT_S after it starts): a retry that would go on past it
# ends the loop with an error instead, so that a stuck client fails the test, never hangs it.
DEADLINE = [float("inf")]


def give_up_if_late(what):
    if time.time() > DEADLINE[0]:
        sys.exit(f"loop: still retrying {what} after {LOOP_LIMIT_S} s")


def say(line):
    print(line, flush=True)


class ClientHang(Exception):
    """A librdkafka call still blocked HANG_S after its own timeout."""


# A broker fenced for a while (killed, then restarting) is absent from Metadata, as in Kafka,
# and librdkafka decommissions its handle; a send_offsets_to_transaction or commit_transaction
# that was waiting on it as the group or transaction coordinator can then block forever past its
# timeout (librdkafka issues #5511 and #5456: "Handle is terminating in state TRY_CONNECT").
# The loop treats a call blocked that long as the producer's death: it leaves the producer, and
# a new one with the same transactional id fences it (its open transaction is aborted).
HANG_S = 2 * OP_TIMEOUT_S

# How long the loop's consumer may hold partitions of an input not consumed to its end
# without receiving a record before the loop takes it for stuck (see Loop.main).
CONSUMER_STALL_S = 30.0


def bounded(call):
    """Runs `call` on a daemon thread; its result, its exception, or ClientHang."""
    outcome = {}

    def run():
        try:
            outcome["result"] = call()
        except BaseException as error:  # noqa: BLE001 - handed back to the caller
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_S)
    if thread.is_alive():
        raise ClientHang()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


def fill(bootstrap, prefix, n_records):
    admin = AdminClient({"bootstrap.servers": bootstrap, **COMMON})
    # EOS_REPLICATION_FACTOR: the topics' replication factor (1; a cluster's scenario, 3).
    factor = int(os.environ.get("EOS_REPLICATION_FACTOR", "1"))
    topics = [NewTopic(f"{prefix}-{kind}", PARTITIONS, factor) for kind in ("in", "out")]
    for future in admin.create_topics(topics).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, **COMMON, "enable.idempotence": True,
                         "linger.ms": 20})
    failures = []

    def on_delivery(error, _message):
        if error is not None:
            failures.append(error)

    for k in range(n_records):
        while True:
            try:
                producer.produce(f"{prefix}-in", value=f"in-{k}".encode(),
                                 partition=k % PARTITIONS, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(120)
    if remaining or failures:
        sys.exit(f"fill: {remaining} undelivered, failures {failures[:5]}")
    say(f"FILLED {n_records}")


class Loop:
    """The consume-transform-produce loop and its recovery."""

    def __init__(self, bootstrap, prefix, batch_max, seed):
        self.bootstrap, self.prefix, self.batch_max = bootstrap, prefix, batch_max
        self.random = random.Random(seed)
        self.input, self.output = f"{prefix}-in", f"{prefix}-out"
        self.run, self.n_txns = 0, 0
        self.producer = None
        self.consumer = None
        self.new_consumer()
        self.ends = self.input_ends()
        self.committed = {p: 0 for p in range(PARTITIONS)}

    def new_consumer(self):
        """A consumer of the input in the loop's group (the previous one, if any, closed)."""
        if self.consumer is not None:
            try:
                bounded(self.consumer.close)
            except (ClientHang, KafkaException) as error:
                say(f"ERROR close {error!r}")
        self.consumer = Consumer({
            "bootstrap.servers": self.bootstrap, **COMMON, "group.id": f"{self.prefix}-group",
            "isolation.level": "read_committed", "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            # librdkafka's debug contexts for the consumer, e.g. "cgrp,broker" (to stderr).
            **({"debug": os.environ["SEGLOG_EOS_CONSUMER_DEBUG"]}
               if "SEGLOG_EOS_CONSUMER_DEBUG" in os.environ else {})})
        self.consumer.subscribe([self.input])

    def input_ends(self):
        ends = {}
        for p in range(PARTITIONS):
            while True:
                give_up_if_late("the input's watermarks")
                try:
                    _, high = self.consumer.get_watermark_offsets(
                        TopicPartition(self.input, p), timeout=OP_TIMEOUT_S)
                    ends[p] = high
                    break
                except KafkaException as error:
                    say(f"ERROR watermarks {error.args[0]}")
        return ends

    def new_producer(self):
        self.run += 1
        self.producer = Producer({
            "bootstrap.servers": self.bootstrap, **COMMON,
            "transactional.id": f"{self.prefix}-eos", "linger.ms": 5,
            # librdkafka's debug contexts for the producer, e.g. "eos,protocol" (to stderr).
            **({"debug": os.environ["SEGLOG_EOS_DEBUG"]} if "SEGLOG_EOS_DEBUG" in os.environ
               else {})})
        while True:
            give_up_if_late("init_transactions")
            try:
                self.producer.init_transactions(OP_TIMEOUT_S)
                break
            except KafkaException as error:
                kafka_error = error.args[0]
                say(f"ERROR init_transactions {kafka_error}")
                if kafka_error.fatal():
                    sys.exit(f"init_transactions failed fatally: {kafka_error}")
        say(f"RUN r{self.run}")

    def rewind(self):
        """Seeks every assigned partition back to the group's committed offset; a consumer
        that cannot get them for CONSUMER_STALL_S is replaced (it starts from them)."""
        started = time.time()
        while True:
            give_up_if_late("the group's committed offsets")
            if time.time() - started > CONSUMER_STALL_S:
                say(f"ERROR rewind: no committed offsets for {CONSUMER_STALL_S:.0f} s: "
                    "a new consumer")
                self.new_consumer()
                return
            assignment = self.consumer.assignment()
            try:
                committed = self.consumer.committed(assignment, timeout=CONSUMER_STALL_S / 3)
                for tp in committed:
                    offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                    self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
                    self.committed[tp.partition] = max(tp.offset, 0)
                return
            except KafkaException as error:
                say(f"ERROR rewind {error.args[0]}")

    def done(self):
        return all(self.committed[p] >= self.ends[p] for p in range(PARTITIONS))

    def transaction(self, messages):
        """One transaction over `messages`; returns normally when it committed or was
        aborted, leaving the consumer where the next transaction starts."""
        self.n_txns += 1
        txn = f"r{self.run}/{self.n_txns}"
        count = len(messages)
        phase = "begin"
        draw = self.random.random()
        abort_at = "produce" if draw < 1 / 16 else "offsets" if draw < 1 / 8 else None
        try:
            self.producer.begin_transaction()
            phase = "produce"
            say(f"PHASE {txn} produce")
            for message in messages:
                k = message.value().decode().removeprefix("in-")
                while True:
                    try:
                        self.producer.produce(self.output, value=f"out-{k} txn={txn}".encode(),
                                              partition=message.partition())
                        break
                    except BufferError:
                        self.producer.poll(0.05)
                self.producer.poll(0)
            if abort_at == "produce":
                self.deliberate_abort(txn, count, phase)
                return
            phase = "offsets"
            say(f"PHASE {txn} offsets")
            batch = {TopicPartition(self.input, p) for p in {m.partition() for m in messages}}
            positions = self.consumer.position(list(batch))
            self.send_offsets(positions)
            if abort_at == "offsets":
                self.deliberate_abort(txn, count, phase)
                return
            phase = "commit"
            say(f"PHASE {txn} commit")
            self.commit()
        except ClientHang:
            # Before the commit was asked for, the transaction cannot commit; during it, the
            # outcome is unknown. The blocked producer is left to its thread.
            kind = "UNKNOWN" if phase == "commit" else "ABORTED"
            say(f"{kind} {txn} {count} {phase}:client-hang")
            self.producer = None
            self.new_producer()
            self.rewind()
            return
        except KafkaException as error:
            kafka_error = error.args[0]
            if kafka_error.txn_requires_abort():
                self.abort(txn, count, f"{phase}:{kafka_error.name()}")
            else:
                # Fatal: this producer is done. Before the commit was asked for, the
                # transaction cannot commit; during it, the outcome is unknown.
                kind = "UNKNOWN" if phase == "commit" else "ABORTED"
                say(f"{kind} {txn} {count} {phase}:{kafka_error.name()}")
                self.producer = None
                self.new_producer()
            self.rewind()
            return
        say(f"COMMITTED {txn} {count}")
        for tp in positions:
            self.committed[tp.partition] = tp.offset

    def deliberate_abort(self, txn, count, phase):
        """Flushes (the records reach the log), aborts and rewinds."""
        while self.producer.flush(OP_TIMEOUT_S) > 0:
            say(f"ERROR flush {len(self.producer)} records left")
        self.abort(txn, count, f"{phase}:deliberate")
        self.rewind()

    def send_offsets(self, positions):
        while True:
            give_up_if_late("send_offsets_to_transaction")
            try:
                metadata = self.consumer.consumer_group_metadata()
                bounded(lambda: self.producer.send_offsets_to_transaction(
                    positions, metadata, OP_TIMEOUT_S))
                return
            except KafkaException as error:
                if not error.args[0].retriable():
                    raise
                say(f"ERROR send_offsets_to_transaction {error.args[0]}")

    def commit(self):
        while True:
            give_up_if_late("commit_transaction")
            try:
                bounded(lambda: self.producer.commit_transaction(OP_TIMEOUT_S))
                return
            except KafkaException as error:
                if not error.args[0].retriable():
                    raise
                say(f"ERROR commit_transaction {error.args[0]}")

    def abort(self, txn, count, why):
        while True:
            give_up_if_late("abort_transaction")
            try:
                self.producer.abort_transaction(OP_TIMEOUT_S)
                say(f"ABORTED {txn} {count} {why}")
                return
            except KafkaException as error:
                kafka_error = error.args[0]
                if kafka_error.retriable():
                    say(f"ERROR abort_transaction {kafka_error}")
                    continue
                # The abort failed fatally: an abortable error may hide a commit that went
                # through, so the outcome is unknown; a new producer settles it.
                say(f"UNKNOWN {txn} {count} {why}+abort:{kafka_error.name()}")
                self.producer = None
                self.new_producer()
                return

    def main(self):
        self.new_producer()
        started = time.time()
        DEADLINE[0] = started + LOOP_LIMIT_S
        last_records = time.time()
        while not self.done():
            if time.time() - started > LOOP_LIMIT_S:
                sys.exit(f"loop: not done after {LOOP_LIMIT_S} s: committed {self.committed}, "
                         f"ends {self.ends}")
            messages = []
            for message in self.consumer.consume(self.batch_max, 0.5):
                if message.error() is None:
                    messages.append(message)
                elif message.error().fatal():
                    sys.exit(f"consumer: {message.error()}")
            if messages:
                last_records = time.time()
                self.transaction(messages)
            elif time.time() - last_records > CONSUMER_STALL_S:
                # Records are left (not done), yet none came: librdkafka issue #5586 leaves an
                # assigned partition waiting forever for its committed offset after an
                # OffsetFetch answered NOT_COORDINATOR (the group's coordinator moved). A new
                # consumer starts from the committed offsets.
                say(f"ERROR consumer: no records for {CONSUMER_STALL_S:.0f} s with "
                    f"{len(self.consumer.assignment())} partition(s) assigned: a new consumer")
                self.new_consumer()
                last_records = time.time()
            elif not self.consumer.assignment():
                continue
            else:
                # Nothing to read: the committed offsets may be ahead of what this process
                # saw committed (a commit of unknown outcome that went through).
                self.rewind()
        say(f"DONE {self.n_txns}")
        self.consumer.close()


def high_watermark(consumer, topic, p):
    """The partition's high watermark; asked again while it has no leader for a moment (its
    broker restarting)."""
    for attempt in range(30):
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
        except KafkaException as error:
            if attempt == 29 or not error.args[0].retriable() and \
                    error.args[0].code() != KafkaError._UNKNOWN_PARTITION:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def read_all(bootstrap, topic, isolation, line):
    consumer = Consumer({
        "bootstrap.servers": bootstrap, **COMMON, "group.id": f"{topic}-checker",
        "enable.auto.commit": False, "isolation.level": isolation,
        "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    at_end, deadline = set(), time.time() + 120
    # read_committed stops at the last stable offset: a committed transaction whose markers
    # its coordinator is still writing (a leader was away) holds it below the high watermark
    # for a while, so the end waits for LSO == HW, at most SETTLE_S; a transaction still open
    # then is what the checker reports as hanging.
    settle_deadline = None
    while True:
        if len(at_end) == PARTITIONS:
            if isolation != "read_committed":
                break
            settle_deadline = settle_deadline or time.time() + SETTLE_S
            positions = consumer.position([TopicPartition(topic, p) for p in range(PARTITIONS)])
            behind = [tp.partition for tp in positions
                      if tp.offset < high_watermark(consumer, topic, tp.partition)]
            if not behind or time.time() > settle_deadline:
                break
            at_end.difference_update(behind)
        if time.time() > deadline:
            sys.exit(f"check: {topic} {isolation} not read to its end (at end: {at_end})")
        for message in consumer.consume(1000, 0.5):
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                    continue
                sys.exit(f"check: {topic} {isolation}: {message.error()}")
            at_end.discard(message.partition())
            say(line(message))
    ends = {p: high_watermark(consumer, topic, p) for p in range(PARTITIONS)}
    consumer.close()
    return ends


def check(bootstrap, prefix):
    def output_line(kind):
        def line(message):
            k, txn = message.value().decode().removeprefix("out-").split(" txn=")
            return f"{kind} {message.partition()} {message.offset()} {k} {txn}"
        return line

    ends = read_all(bootstrap, f"{prefix}-in", "read_uncommitted", lambda m: (
        f"IN {m.partition()} {m.offset()} {m.value().decode().removeprefix('in-')}"))
    for p, end in ends.items():
        say(f"END {prefix}-in {p} {end} {end}")
    committed_ends = read_all(bootstrap, f"{prefix}-out", "read_committed", output_line("OUT"))
    raw_ends = read_all(bootstrap, f"{prefix}-out", "read_uncommitted", output_line("RAW"))
    for p in range(PARTITIONS):
        say(f"END {prefix}-out {p} {committed_ends[p]} {raw_ends[p]}")
    consumer = Consumer({"bootstrap.servers": bootstrap, **COMMON, "group.id": f"{prefix}-group",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    asked = [TopicPartition(f"{prefix}-in", p) for p in range(PARTITIONS)]
    for tp in consumer.committed(asked, timeout=30):
        say(f"GROUP-OFFSET {tp.partition} {tp.offset if tp.offset >= 0 else OFFSET_INVALID}")
    consumer.close()


def main():
    bootstrap, prefix, step = sys.argv[1], sys.argv[2], sys.argv[3]
    if step == "fill":
        fill(bootstrap, prefix, int(sys.argv[4]))
    elif step == "loop":
        batch_max = int(sys.argv[4]) if len(sys.argv) > 4 else BATCH_DEFAULT
        seed = int(sys.argv[5]) if len(sys.argv) > 5 else 0
        Loop(bootstrap, prefix, batch_max, seed).main()
    elif step == "check":
        check(bootstrap, prefix)
    else:
        sys.exit(f"unknown step {step}")


if __name__ == "__main__":
    main()
