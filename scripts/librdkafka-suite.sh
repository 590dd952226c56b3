#!/usr/bin/env bash
# Run librdkafka's own integration test suite against `seglog serve`.
#
# Usage: scripts/librdkafka-suite.sh [--smoke] [--build-only] [TEST...]
#
#   --smoke       run a short subset of fast produce/consume tests (for CI)
#   --build-only  build librdkafka and its test-runner, then exit
#   TEST...       run only these 4-digit test numbers (default: the list in
#                 scripts/librdkafka-suite.list)
#
# Environment:
#   SEGLOG_BIN             seglog binary (default: target/release/seglog,
#                          built with cargo if missing)
#   LIBRDKAFKA_SRC         librdkafka source tree (default: newest
#                          rdkafka-sys-*/librdkafka in the cargo registry)
#   LIBRDKAFKA_BUILD_DIR   build dir (default: ${TMPDIR:-/tmp}/seglog-librdkafka)
#   LIBRDKAFKA_TEST_ARGS   test-runner flags (default: "-Q -E")
#   LIBRDKAFKA_TEST_TIMEOUT  per-test timeout in seconds (default: 300)
#   LIBRDKAFKA_LOG_DIR     where per-test and broker logs go
#                          (default: <build dir>/logs)
#   SEGLOG_PORT            broker port (default: a free port)
#   SEGLOG_RUST_LOG        the broker's RUST_LOG (default: info,seglog_broker=debug,
#                          which logs why a connection was closed)
#   TEST_CONSUMER_GROUP_PROTOCOL
#                          librdkafka's own switch: "consumer" runs every group
#                          test with group.protocol=consumer (KIP-848)
#
# Prints one line per failed test and ends with "N passed, M failed"
# followed by the failing test names. Exits 0 iff no test failed.

set -euo pipefail

# Fast tests that need no consumer group: produce + legacy consume (0001,
# 0002, 0012, 0013), every codec (0017), ListOffsets (0031), ApiVersions (0035).
SMOKE_TESTS="0001 0002 0012 0013 0017 0031 0035"

smoke=0
build_only=0
tests=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) smoke=1 ;;
        --build-only) build_only=1 ;;
        -h | --help)
            sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        [0-9][0-9][0-9][0-9]) tests+=("$1") ;;
        *)
            echo "unknown argument: $1" >&2
            exit 2
            ;;
    esac
    shift
done

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
list_file="$script_dir/librdkafka-suite.list"

log() { echo "[librdkafka-suite] $*" >&2; }
die() {
    log "error: $*"
    exit 2
}

# ---------------------------------------------------------------------------
# Locate and build librdkafka + its test-runner.
# ---------------------------------------------------------------------------

find_librdkafka_src() {
    if [ -n "${LIBRDKAFKA_SRC:-}" ]; then
        echo "$LIBRDKAFKA_SRC"
        return
    fi
    local reg="${CARGO_HOME:-$HOME/.cargo}/registry/src"
    local d best="" best_ver=""
    for d in "$reg"/*/rdkafka-sys-*/librdkafka; do
        [ -f "$d/tests/test.c" ] || continue
        local ver
        ver=$(basename "$(dirname "$d")")
        ver=${ver#rdkafka-sys-}
        if [ -z "$best" ] ||
            [ "$(printf '%s\n%s\n' "$best_ver" "$ver" | sort -V | tail -n1)" = "$ver" ]; then
            best=$d
            best_ver=$ver
        fi
    done
    [ -n "$best" ] || die "no rdkafka-sys-*/librdkafka (with tests/) under $reg; run 'cargo fetch' first"
    echo "$best"
}

src=$(find_librdkafka_src)
build_dir="${LIBRDKAFKA_BUILD_DIR:-${TMPDIR:-/tmp}/seglog-librdkafka}"
stamp="$build_dir/.seglog-built-from"
# What the build is made from: the source, and the one change to its tests (below).
build_id="$src (0103 at replication factor 1)"

build_librdkafka() {
    if [ -x "$build_dir/tests/test-runner" ] && [ -f "$stamp" ] &&
        [ "$(cat "$stamp")" = "$build_id" ]; then
        log "reusing librdkafka build in $build_dir"
        return
    fi
    log "building librdkafka from $src in $build_dir"
    rm -rf "$build_dir"
    mkdir -p "$build_dir"
    cp -R "$src/." "$build_dir/"
    chmod -R u+w "$build_dir"
    # seglog is one broker. 0103 (transactions) creates its topics with replication factor 3,
    # which Kafka refuses on one broker too (INVALID_REPLICATION_FACTOR); the copy of the test
    # asks for 1 instead. Nothing else in the suite is changed.
    sed -i 's/test_create_topic_wait_exists(\(.*\), 3, 5000);/test_create_topic_wait_exists(\1, 1, 5000);/' \
        "$build_dir/tests/0103-transactions.c"
    grep -q ', 3, 5000);' "$build_dir/tests/0103-transactions.c" &&
        die "0103-transactions.c still asks for replication factor 3 (the test changed upstream)"
    (
        cd "$build_dir"
        # zstd, lz4, zlib and ssl are auto-detected ("try"); only the
        # features that need extra system packages are switched off.
        ./configure --disable-gssapi --disable-curl
        make -j2 libs
        make -C tests -j2 build
    ) >"$build_dir.build.log" 2>&1 || {
        tail -n 40 "$build_dir.build.log" >&2
        die "librdkafka build failed, see $build_dir.build.log"
    }
    echo "$build_id" >"$stamp"
}

build_librdkafka
[ "$build_only" = 1 ] && exit 0

# ---------------------------------------------------------------------------
# Select the tests.
# ---------------------------------------------------------------------------

if [ ${#tests[@]} -eq 0 ]; then
    if [ "$smoke" = 1 ]; then
        read -r -a tests <<<"$SMOKE_TESTS"
    else
        [ -f "$list_file" ] || die "missing $list_file"
        while read -r line; do
            line=${line%%#*}
            line=${line//[[:space:]]/}
            [ -n "$line" ] && tests+=("$line")
        done <"$list_file"
    fi
fi
[ ${#tests[@]} -gt 0 ] || die "no tests selected"

# ---------------------------------------------------------------------------
# Start the broker.
# ---------------------------------------------------------------------------

seglog_bin="${SEGLOG_BIN:-$repo_root/target/release/seglog}"
if [ ! -x "$seglog_bin" ]; then
    [ -z "${SEGLOG_BIN:-}" ] || die "SEGLOG_BIN=$SEGLOG_BIN is not executable"
    log "building seglog (cargo build --release -p seglog)"
    (cd "$repo_root" && cargo build --release -p seglog) >&2
fi

pick_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

port="${SEGLOG_PORT:-$(pick_port)}"
logs="${LIBRDKAFKA_LOG_DIR:-$build_dir/logs}"
mkdir -p "$logs"
rm -f "$logs"/[0-9][0-9][0-9][0-9].log "$logs/broker.log"
data_dir=$(mktemp -d "${TMPDIR:-/tmp}/seglog-librdkafka-data.XXXXXX")
# This run's client config: per run, so runs sharing a build directory do not point each
# other's tests at the wrong broker.
test_conf=$(mktemp "${TMPDIR:-/tmp}/seglog-librdkafka-test.conf.XXXXXX")
broker_log="$logs/broker.log"
broker_pid=""

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
        kill -TERM "$broker_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$broker_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$broker_pid" 2>/dev/null || true
        wait "$broker_pid" 2>/dev/null || true
    fi
    rm -rf "$data_dir" "$test_conf"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "starting $seglog_bin on 127.0.0.1:$port (log: $broker_log)"
# The suite's "default" scenario (tests/scenarios/default.json) is a
# cluster with auto topic creation and num.partitions=4.
RUST_LOG="${SEGLOG_RUST_LOG:-info,seglog_broker=debug}" \
    "$seglog_bin" serve --listener "127.0.0.1:$port" --log-dir "$data_dir" \
    --metrics-listener '' --override num.partitions=4 >"$broker_log" 2>&1 &
broker_pid=$!
for _ in $(seq 1 100); do
    port_open "$port" && break
    kill -0 "$broker_pid" 2>/dev/null || {
        tail -n 20 "$broker_log" >&2
        die "broker exited during startup"
    }
    sleep 0.1
done
port_open "$port" || die "broker did not listen on port $port within 10s"

# ---------------------------------------------------------------------------
# Run the tests, one test-runner invocation per test number.
# ---------------------------------------------------------------------------

tests_dir="$build_dir/tests"
cat >"$test_conf" <<EOF
# Generated by seglog scripts/librdkafka-suite.sh
metadata.broker.list=127.0.0.1:$port
test.topic.random=true
EOF

read -r -a test_args <<<"${LIBRDKAFKA_TEST_ARGS:--Q -E}"
timeout_s="${LIBRDKAFKA_TEST_TIMEOUT:-300}"
passed=0
failed=()

for t in "${tests[@]}"; do
    out="$logs/$t.log"
    start=$SECONDS
    log "test $t ..."
    rc=0
    (
        cd "$tests_dir"
        TESTS=$t TEST_KAFKA_VERSION=3.9.0 RDKAFKA_GITVER=seglog RDKAFKA_TEST_CONF="$test_conf" \
            timeout -k 10 "$timeout_s" ./run-test.sh "${test_args[@]}"
    ) >"$out" 2>&1 </dev/null || rc=$?
    dur=$((SECONDS - start))
    if ! kill -0 "$broker_pid" 2>/dev/null; then
        echo "FAIL $t (broker died; see $broker_log)"
        failed+=("$t")
        break
    fi
    if [ "$rc" = 0 ]; then
        passed=$((passed + 1))
        log "test $t passed (${dur}s)"
    else
        # The first failure message: the line after '### Test "..." failed at'.
        reason=$(sed 's/\x1b\[[0-9;]*m//g' "$out" | awk '
            /^### Test ".*" failed at / { getline; print; exit }' |
            cut -c1-200 || true)
        [ "$rc" = 124 ] && reason="timed out after ${timeout_s}s"
        echo "FAIL $t (${dur}s): ${reason:-exit code $rc} [log: $out]"
        failed+=("$t")
    fi
done

echo "$passed passed, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
    echo "${failed[*]}"
    exit 1
fi
exit 0
