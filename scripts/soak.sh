#!/usr/bin/env bash
# The soak: one broker under idempotent producers, group churn, topic churn, rolls and
# retention for --minutes; then every acknowledged record is read back, the broker's RSS,
# descriptors and produce p99 are judged flat, the broker is stopped cleanly and its log
# directory verified. What runs and the pass conditions: scripts/soak.py.
#
# Usage: scripts/soak.sh [--minutes M] [--partitions N] [--rate R] [--retention-ms MS]
#                        [--segment-ms MS] [--png PATH]
#
#   --minutes M     how long the load runs (default 30; CI runs 3)
#   --partitions N  partitions of the topic `soak` (default 2000)
#   --rate R        records/s from the librdkafka producer (kafka-python adds R/10; default 1000)
#   --retention-ms MS  retention.ms of the topic `soak` (default 600000: 10 minutes)
#   --segment-ms MS    segment.ms of `soak` (default 180000; segment.jitter.ms is 2/3 of it)
#   --png PATH      where the plot goes (default soak.png in the work directory)
#
# Environment:
#   SEGLOG_BIN      seglog binary (default target/release/seglog, built if missing)
#   SEGLOG_PYTHON   a Python with confluent-kafka and kafka-python (default
#                   target/ci-venv/bin/python, as .ci/run makes it); kcat on the PATH
#   SOAK_WORK       the work directory (default a new one under ${TMPDIR:-/tmp}, removed after
#                   a passed run unless SOAK_KEEP=1)
#
# Ends with the summary (JSON) and "soak: passed" or "soak: FAILED" and the reasons.

set -euo pipefail

minutes=30
partitions=2000
rate=1000
retention_ms=600000
segment_ms=180000
png=""
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes=$2; shift ;;
        --partitions) partitions=$2; shift ;;
        --rate) rate=$2; shift ;;
        --retention-ms) retention_ms=$2; shift ;;
        --segment-ms) segment_ms=$2; shift ;;
        --png) png=$2; shift ;;
        -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seglog=${SEGLOG_BIN:-$repo_root/target/release/seglog}
if [ ! -x "$seglog" ]; then
    (cd "$repo_root" && cargo build --release -p seglog) >&2
fi
python=${SEGLOG_PYTHON:-$repo_root/target/ci-venv/bin/python}
"$python" -c 'import confluent_kafka, kafka' 2>/dev/null ||
    { echo "no confluent-kafka or kafka-python in $python (set SEGLOG_PYTHON)" >&2; exit 2; }
command -v kcat >/dev/null || { echo "kcat is not on the PATH" >&2; exit 2; }

work=${SOAK_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/seglog-soak.XXXXXX")}
mkdir -p "$work"
png=${png:-$work/soak.png}
data=$work/data
broker_pid=""
passed=0
cleanup() {
    # Workers of an interrupted run (soak.py kills them itself when it ends normally).
    pkill -KILL -f -- "--work $work " 2>/dev/null || true
    if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
    if [ "$passed" = 1 ] && [ "${SOAK_KEEP:-0}" != 1 ] && [ -z "${SOAK_WORK:-}" ]; then
        rm -rf "$data"
    else
        echo "soak: the work directory is kept: $work" >&2
    fi
}
trap cleanup EXIT

port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
bootstrap=127.0.0.1:$port
# Retention runs every 5 s (Kafka's default is 5 minutes) so that it runs often in a short soak.
"$seglog" serve --log-dir "$data" --listener "$bootstrap" --metrics-listener '' --console-listener '' \
    --override log.retention.check.interval.ms=5000 >"$work/broker.log" 2>&1 &
broker_pid=$!
"$python" - "$bootstrap" <<'PY'
import sys, time
from confluent_kafka.admin import AdminClient
deadline = time.monotonic() + 120
while True:
    try:
        AdminClient({"bootstrap.servers": sys.argv[1], "log_level": 0}).list_topics(timeout=2)
        break
    except Exception:
        if time.monotonic() > deadline:
            raise SystemExit("the broker did not answer Metadata within 120 s")
        time.sleep(0.2)
PY
echo "soak: broker $broker_pid on $bootstrap, RLIMIT_NOFILE $(ulimit -n), work $work" >&2

status=0
"$python" "$repo_root/scripts/soak.py" run "$bootstrap" --broker-pid "$broker_pid" \
    --log-dir "$data" --work "$work" --minutes "$minutes" --partitions "$partitions" \
    --rate "$rate" --retention-ms "$retention_ms" --segment-ms "$segment_ms" --png "$png" || status=$?

# A clean stop, then the tools' verify over the whole directory.
kill -TERM "$broker_pid"
broker_status=0
wait "$broker_pid" || broker_status=$?
broker_pid=""
if [ "$broker_status" != 0 ]; then
    echo "soak: FAILED: the broker exited with $broker_status on SIGTERM" >&2
    status=1
fi
if grep -n "panicked" "$work/broker.log" >&2; then
    echo "soak: FAILED: the broker panicked" >&2
    status=1
fi
echo "soak: broker log: $(grep -c ' WARN ' "$work/broker.log" || true) WARN, $(grep -c ' ERROR ' "$work/broker.log" || true) ERROR lines" >&2
grep -E ' (WARN|ERROR) ' "$work/broker.log" | sed 's/^/  /' | sort | uniq -c | sort -rn | head -n 10 >&2 || true
if ! "$seglog" verify --log-dir "$data" >"$work/verify.log" 2>&1; then
    echo "soak: FAILED: seglog verify after the clean stop (see $work/verify.log)" >&2
    tail -n 20 "$work/verify.log" >&2
    status=1
else
    echo "soak: verify after the clean stop: $(tail -n 1 "$work/verify.log")" >&2
fi
[ "$status" = 0 ] && passed=1
exit "$status"
