#!/usr/bin/env bash
# Instructions per record of the append path, the stable measure on noisy machines: runs
# `seglog bench --workload loops` under valgrind's callgrind twice, collecting only inside
# seglog's append loop, then only inside commitlog's, and divides each count by the records.
#
# Usage: scripts/instructions.sh [--record-bytes B] [--total-mib M] [--compression C]
#
#   --record-bytes B  bytes per record value (default 100)
#   --total-mib M     MiB of batches each loop appends (default 16)
#   --compression C   the producer batch's codec (default none)
#
# Environment:
#   SEGLOG_BIN  seglog binary (default target/release/seglog, built if missing)
#
# Ends with one machine-readable line:
#   instructions records=N seglog_per_record=.. commitlog_per_record=.. ratio=..

set -euo pipefail

record_bytes=100
total_mib=16
compression=none
while [ $# -gt 0 ]; do
    case "$1" in
        --record-bytes) record_bytes=$2; shift ;;
        --total-mib) total_mib=$2; shift ;;
        --compression) compression=$2; shift ;;
        -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seglog=${SEGLOG_BIN:-$repo_root/target/release/seglog}
if [ ! -x "$seglog" ]; then
    (cd "$repo_root" && cargo build --release -p seglog) >&2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/seglog-instructions.XXXXXX")
trap 'rm -rf "$work"' EXIT

# count FUNCTION: the instructions callgrind collected inside FUNCTION (and what it calls).
count() {
    local out=$work/callgrind.$1
    valgrind --tool=callgrind --collect-atstart=no "--toggle-collect=*$1*" \
        --callgrind-out-file="$out" \
        "$seglog" bench --workload loops --dir "$work" --record-bytes "$record_bytes" \
        --total-mib "$total_mib" --compression "$compression" >"$work/stdout.$1" 2>"$work/stderr.$1" ||
        { cat "$work/stderr.$1" >&2; exit 1; }
    awk '/^summary:/ { print $2 }' "$out"
}

seglog_ir=$(count seglog_append_loop)
commitlog_ir=$(count commitlog_append_loop)
records=$(sed -n 's/^loops records=\([0-9]*\).*/\1/p' "$work/stdout.seglog_append_loop")
[ -n "$records" ] && [ "$records" -gt 0 ] || { echo "the bench reported no records" >&2; exit 1; }
awk -v s="$seglog_ir" -v c="$commitlog_ir" -v n="$records" -v b="$record_bytes" 'BEGIN {
    printf "%d records of %d B: seglog %.0f instructions per record, commitlog %.0f (seglog/commitlog %.2f)\n", n, b, s / n, c / n, s / c
    printf "instructions records=%d seglog_per_record=%.1f commitlog_per_record=%.1f ratio=%.3f\n", n, s / n, c / n, s / c
}'
