"""Security with real Python clients against `seglog serve` (driven by tests/it/security.rs).

    security.py confluent|kafka-python BOOTSTRAP TOPIC GROUP CONFIG_JSON
    security.py salted PASSWORD SALT_BASE64 ITERATIONS sha256|sha512

The first form produces RECORDS records to TOPIC partition 0 with the client settings in
CONFIG_JSON (librdkafka names for confluent-kafka, keyword arguments for kafka-python), reads
them back from the start and commits the offset for GROUP. A CONFIG_JSON key "oauth_token"
(confluent-kafka) is a dict of JWT claims: the client then authenticates with an unsecured JWS
(`alg: none`) of those claims, `exp` and `iat` given as seconds from now. With "subscribe":
true (confluent-kafka), the consumer joins GROUP rather than assigning the partition itself:
then nothing is read before the group's coordinator has answered.

It prints what happened, one fact a line, for the Rust test to judge:

    PRODUCED <n>                  every record acknowledged
    CONSUMED <n> in order         read back, the values as produced
    COMMITTED <offset>            the group's offset committed
    REFUSED <error name> <text>   the connection was refused (TLS or SASL)
    ERROR <phase> <error name> <text>

The second form prints a SCRAM salted password (Hi() of RFC 5802) in base64 and hex, for the
test to check that it appears nowhere.
"""

import base64
import hashlib
import json
import logging
import os
import sys
import threading
import time

RECORDS = 20
DEADLINE_S = 30


def say(*words):
    print(*words, flush=True)


def unsecured_jws(claims):
    """An unsecured JWS (RFC 7515 appendix A.5), as Kafka's OAuthBearerUnsecuredJws reads it."""

    def part(value):
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    now = int(time.time())
    claims = dict(claims)
    for key in ("exp", "iat"):
        if key in claims:
            claims[key] = now + int(claims[key])
    return part({"alg": "none"}) + "." + part(claims) + "."


# --- confluent-kafka ----------------------------------------------------------------------------

# librdkafka's errors for a connection it could not set up or authenticate.
REFUSALS = ("_AUTHENTICATION", "_SSL", "_TRANSPORT", "_ALL_BROKERS_DOWN")


def confluent(bootstrap, topic, group, config):
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    refused = []

    def error_cb(error):
        if error.name() in REFUSALS and not refused:
            refused.append(error)

    base = {"bootstrap.servers": bootstrap, "error_cb": error_cb, "broker.address.family": "v4"}
    subscribe = config.pop("subscribe", False)
    token_claims = config.pop("oauth_token", None)
    if token_claims is not None:
        sub = token_claims.get("sub", "")

        def oauth_cb(_config):
            # librdkafka is told the token lives an hour: it refuses to hand over a token it
            # knows to be expired, and the broker is the one to judge the `exp` claim.
            return unsecured_jws(token_claims), time.time() + 3600, sub, {}

        base["oauth_cb"] = oauth_cb
    base.update(config)

    def check_refused():
        if refused:
            error = refused[0]
            say("REFUSED", error.name(), error.str())
            return True
        return False

    producer = Producer(dict(base, **{"message.timeout.ms": DEADLINE_S * 1000}))
    failures = []

    def delivered(error, _message):
        if error is not None:
            failures.append(error)

    for i in range(RECORDS):
        producer.produce(topic, value=f"{topic}-{i}".encode(), partition=0, on_delivery=delivered)
    deadline = time.monotonic() + DEADLINE_S
    while len(producer) > 0 and time.monotonic() < deadline and not refused and not failures:
        producer.poll(0.05)
    if check_refused():
        return
    if failures:
        say("ERROR produce", failures[0].name(), failures[0].str())
        return
    if len(producer) > 0:
        say("ERROR produce TIMEOUT", f"{len(producer)} records undelivered")
        return
    say("PRODUCED", RECORDS)

    consumer = Consumer(
        dict(base, **{"group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    )
    if subscribe:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.monotonic() + DEADLINE_S
    while len(values) < RECORDS and time.monotonic() < deadline and not refused:
        message = consumer.poll(0.1)
        if message is None:
            continue
        if message.error() is not None:
            say("ERROR consume", message.error().name(), message.error().str())
            consumer.close()
            return
        values.append(message.value().decode())
    if check_refused():
        return
    if values == [f"{topic}-{i}" for i in range(RECORDS)]:
        say("CONSUMED", len(values), "in order")
    else:
        say("ERROR consume VALUES", values)
    try:
        committed = consumer.commit(asynchronous=False)
        say("COMMITTED", committed[0].offset)
    except KafkaException as error:
        say("ERROR commit", error.args[0].name(), error.args[0].str())
    consumer.close()


# --- kafka-python -------------------------------------------------------------------------------


def kafka_python(bootstrap, topic, group, config):
    import kafka.errors
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    def error(phase, exc):
        name = type(exc).__name__
        # kafka-python's names are Kafka's error names in CamelCase with "Error" appended.
        say("ERROR" if phase else "REFUSED", *([phase] if phase else []), name, str(exc))

    # A refused connection does not raise at once: kafka-python logs it and retries the
    # bootstrap until its deadline. The first failed bootstrap connection is the refusal.
    refused = []
    done = threading.Event()

    class Bootstrap(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("Bootstrap connection to") and not refused:
                refused.append(record.args[1])
                done.set()

    logging.getLogger("kafka").addHandler(Bootstrap(level=logging.WARNING))
    common = dict(bootstrap_servers=bootstrap, request_timeout_ms=DEADLINE_S * 1000, **config)
    made = []

    def make():
        try:
            made.append(KafkaProducer(max_block_ms=10_000, **common))
        except Exception as exc:  # noqa: BLE001 (reported below)
            made.append(exc)
        done.set()

    threading.Thread(target=make, daemon=True).start()
    done.wait(DEADLINE_S)
    if refused:
        error(None, refused[0])
        sys.stdout.flush()
        os._exit(0)
    if not made or isinstance(made[0], Exception):
        say("ERROR connect", type(made[0]).__name__ if made else "TIMEOUT", made[0] if made else "")
        return
    producer = made[0]
    try:
        futures = [
            producer.send(topic, value=f"{topic}-{i}".encode(), partition=0) for i in range(RECORDS)
        ]
        for future in futures:
            future.get(timeout=DEADLINE_S)
    except kafka.errors.KafkaError as exc:
        error("produce", exc)
        producer.close(timeout=1)
        return
    producer.close()
    say("PRODUCED", RECORDS)

    consumer = KafkaConsumer(
        group_id=group, enable_auto_commit=False, auto_offset_reset="earliest", **common
    )
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    values = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(values) < RECORDS and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=100).values():
                values.extend(record.value.decode() for record in records)
    except kafka.errors.KafkaError as exc:
        error("consume", exc)
        consumer.close()
        return
    if values == [f"{topic}-{i}" for i in range(RECORDS)]:
        say("CONSUMED", len(values), "in order")
    else:
        say("ERROR consume VALUES", values)
    try:
        consumer.commit()
        say("COMMITTED", consumer.committed(partition))
    except kafka.errors.KafkaError as exc:
        error("commit", exc)
    consumer.close()


def salted(password, salt, iterations, digest):
    value = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(salt), int(iterations))
    say(base64.b64encode(value).decode())
    say(value.hex())


def main():
    mode, *args = sys.argv[1:]
    if mode == "salted":
        salted(*args)
        return
    bootstrap, topic, group, config = args
    {"confluent": confluent, "kafka-python": kafka_python}[mode](
        bootstrap, topic, group, json.loads(config)
    )


if __name__ == "__main__":
    main()
