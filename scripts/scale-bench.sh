#!/usr/bin/env bash
# One node with many partitions: create a wide topic with the tools, serve it, produce to and
# consume from random partitions with a real client, and restart cleanly; prints the time of
# each step, the broker's RSS and open descriptors, and RLIMIT_NOFILE.
#
# Usage: scripts/scale-bench.sh [--partitions N] [--sample K] [--nofile L]
#
#   --partitions N  partitions of the topic (default 100000)
#   --sample K      random partitions produced to and read back (default 1000)
#   --nofile L      run everything under `ulimit -n L` (default: this shell's limit)
#
# Environment:
#   SEGLOG_BIN      seglog binary (default target/release/seglog, built if missing)
#   SEGLOG_PYTHON   a Python with confluent-kafka (default target/ci-venv/bin/python, as
#                   .ci/run makes it)
#   BENCH_DATA_DIR  parent of the log directory (default ${TMPDIR:-/tmp})
#   BENCH_KEEP=1    keep the log directory
#
# Ends with one machine-readable line:
#   scale partitions=N create_s=.. start_to_metadata_s=.. sample_s=.. restart_to_metadata_s=..
#   rss_kb=.. fds=.. rlimit_nofile=..

set -euo pipefail

partitions=100000
sample=1000
nofile=""
while [ $# -gt 0 ]; do
    case "$1" in
        --partitions) partitions=$2; shift ;;
        --sample) sample=$2; shift ;;
        --nofile) nofile=$2; shift ;;
        -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$nofile" ] && ulimit -n "$nofile"

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seglog=${SEGLOG_BIN:-$repo_root/target/release/seglog}
if [ ! -x "$seglog" ]; then
    (cd "$repo_root" && cargo build --release -p seglog) >&2
fi
python=${SEGLOG_PYTHON:-$repo_root/target/ci-venv/bin/python}
"$python" -c 'import confluent_kafka' 2>/dev/null ||
    { echo "no confluent-kafka in $python (set SEGLOG_PYTHON)" >&2; exit 2; }
work=$(mktemp -d "${BENCH_DATA_DIR:-${TMPDIR:-/tmp}}/seglog-scale.XXXXXX")
broker_pid=""
cleanup() {
    [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
log() { echo "== $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

data=$work/data
log "RLIMIT_NOFILE $(ulimit -n); creating $partitions partitions in $data"
t0=$(now)
"$seglog" topics create --log-dir "$data" --topic wide --partitions "$partitions" >&2
create_s=$(since "$t0")
log "created in ${create_s}s"

port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# start_and_wait: starts the broker (broker_pid) and waits until Metadata lists every
# partition; sets waited_s to the seconds from the start.
waited_s=""
start_and_wait() {
    local t0
    t0=$(now)
    "$seglog" serve --log-dir "$data" --listener "127.0.0.1:$port" --metrics-listener '' --console-listener '' \
        >>"$work/broker.log" 2>&1 &
    broker_pid=$!
    "$python" - "127.0.0.1:$port" "$partitions" <<'PY'
import sys, time
from confluent_kafka.admin import AdminClient
deadline = time.monotonic() + 600
while True:
    try:
        # log_level 0: no line per refused connection while the broker loads.
        md = AdminClient({"bootstrap.servers": sys.argv[1], "log_level": 0}).list_topics(
            "wide", timeout=5)
        if len(md.topics["wide"].partitions) == int(sys.argv[2]):
            break
    except Exception:
        pass
    if time.monotonic() > deadline:
        raise SystemExit("no full Metadata within 600 s")
    time.sleep(0.2)
PY
    waited_s=$(since "$t0")
}

start_and_wait
start_s=$waited_s
log "serving Metadata of all $partitions partitions ${start_s}s after the start"
t0=$(now)
"$python" "$repo_root/crates/cli/tests/python/wide.py" "127.0.0.1:$port" wide "$partitions" "$sample" 19 >&2
sample_s=$(since "$t0")
rss_kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$broker_pid/status")
fds=$(ls "/proc/$broker_pid/fd" | wc -l)
log "sample of $sample partitions in ${sample_s}s; broker RSS ${rss_kb} kB, ${fds} open descriptors"
kill -TERM "$broker_pid"
wait "$broker_pid" || true
broker_pid=""
start_and_wait
restart_s=$waited_s
idle_rss_kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$broker_pid/status")
idle_fds=$(ls "/proc/$broker_pid/fd" | wc -l)
log "clean restart: Metadata after ${restart_s}s; idle RSS ${idle_rss_kb} kB, ${idle_fds} open descriptors"
grep -E "descriptor budget|raised the open files" "$work/broker.log" | tail -n 2 >&2 || true
echo "scale partitions=$partitions create_s=$create_s start_to_metadata_s=$start_s sample_s=$sample_s restart_to_metadata_s=$restart_s rss_kb=$rss_kb fds=$fds idle_rss_kb=$idle_rss_kb idle_fds=$idle_fds rlimit_nofile=$(ulimit -n)"
