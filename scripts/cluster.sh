#!/usr/bin/env bash
# A local metadata quorum: three `seglog serve` processes with process.roles=controller on
# 127.0.0.1, each formatted with one cluster id (docs/cluster.md). The brokers' side of the
# cluster is not built yet (issue 21), so this runs the controllers only.
#
# Usage: scripts/cluster.sh up|down|status|kill N|start N [--dir DIR] [--ports P1,P2,P3]
#
#   up        formats (once) and starts the three controllers, then waits for the quorum
#   down      stops them (SIGTERM)
#   status    `seglog cluster status` of each controller
#   kill N    SIGKILLs controller N (1-3)
#   start N   starts controller N again
#   --dir     where the controllers keep their directories and logs (default ./seglog-cluster)
#   --ports   their quorum ports (default 19093,19094,19095)
#
# Environment: SEGLOG_BIN, the seglog binary (default target/debug/seglog, built if missing).

set -euo pipefail

command=${1:-}
[ $# -gt 0 ] && shift
node=""
case "$command" in
    kill | start) node=${1:?"$command needs a controller number, 1 to 3"}; shift ;;
    up | down | status) ;;
    -h | --help | "") sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown command: $command" >&2; exit 2 ;;
esac
dir=./seglog-cluster
ports=19093,19094,19095
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$2; shift ;;
        --ports) ports=$2; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
case "$node" in "" | 1 | 2 | 3) ;; *) echo "controller $node: only 1, 2 and 3 exist" >&2; exit 2 ;; esac

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seglog=${SEGLOG_BIN:-$repo_root/target/debug/seglog}
if [ ! -x "$seglog" ]; then
    (cd "$repo_root" && cargo build -p seglog) >&2
fi
IFS=, read -r -a port <<<"$ports"
[ ${#port[@]} -eq 3 ] || { echo "--ports needs three ports" >&2; exit 2; }
voters="1@127.0.0.1:${port[0]},2@127.0.0.1:${port[1]},3@127.0.0.1:${port[2]}"

node_dir() { echo "$dir/controller-$1"; }

start_node() {
    local n=$1 d
    d=$(node_dir "$n")
    if [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
        echo "controller $n is running (pid $(cat "$d/pid"))"
        return
    fi
    nohup "$seglog" serve --config "$d/controller.properties" >>"$d/controller.log" 2>&1 &
    echo $! >"$d/pid"
    echo "controller $n started (pid $!, quorum port ${port[$((n - 1))]}, log $d/controller.log)"
}

status_of() {
    "$seglog" cluster status --controller "127.0.0.1:${port[$(($1 - 1))]}"
}

case "$command" in
    up)
        mkdir -p "$dir"
        cluster_id=""
        for n in 1 2 3; do
            d=$(node_dir "$n")
            mkdir -p "$d"
            cat >"$d/controller.properties" <<PROPS
process.roles=controller
node.id=$n
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
listeners=CONTROLLER://127.0.0.1:${port[$((n - 1))]}
metadata.log.dir=$d/metadata
PROPS
            if [ ! -f "$d/metadata/meta.properties" ]; then
                cluster_id=${cluster_id:-$("$seglog" format --random-uuid -c "$d/controller.properties")}
                "$seglog" format --cluster-id "$cluster_id" --config "$d/controller.properties" >/dev/null
            fi
        done
        for n in 1 2 3; do start_node "$n"; done
        for _ in $(seq 1 600); do
            if status_of 1 2>/dev/null | grep -q 'CurrentVoters: *\[1,2,3\]' \
                && status_of 1 2>/dev/null | grep -q 'MetadataVersion: *14'; then
                status_of 1
                exit 0
            fi
            sleep 0.1
        done
        echo "the quorum did not form within 60 s; see $dir/controller-*/controller.log" >&2
        exit 1
        ;;
    down)
        pids=()
        for n in 1 2 3; do
            d=$(node_dir "$n")
            if [ -f "$d/pid" ] && kill "$(cat "$d/pid")" 2>/dev/null; then
                echo "controller $n stopping"
                pids+=("$(cat "$d/pid")")
            fi
            rm -f "$d/pid"
        done
        # Until they are gone (at most 10 s each), so that the directories are free.
        for pid in "${pids[@]}"; do
            for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        done
        ;;
    status)
        for n in 1 2 3; do
            echo "== controller $n"
            status_of "$n" || echo "(not answering)"
        done
        ;;
    kill)
        d=$(node_dir "$node")
        [ -f "$d/pid" ] && kill -9 "$(cat "$d/pid")" 2>/dev/null && echo "controller $node killed"
        rm -f "$d/pid"
        ;;
    start)
        start_node "$node"
        ;;
esac
