#!/usr/bin/env bash
# A local cluster: three `seglog serve` processes on 127.0.0.1, each both a broker and a voter
# of the metadata quorum (Kafka's combined mode, process.roles=broker,controller), formatted
# with one cluster id (docs/cluster.md).
#
# Usage: scripts/cluster.sh up|down|status|stop N|kill N|start N [--dir DIR] [--ports P1,P2,P3]
#                           [--broker-ports B1,B2,B3] [--extra-properties FILE] [--secure]
#
#   up              formats (once) and starts the three nodes, then waits for the quorum and
#                   for the three brokers to be registered and unfenced
#   down            stops them (SIGTERM)
#   status          `seglog cluster status` of each node
#   stop N          stops node N (SIGTERM: a controlled shutdown) and waits until it is gone
#   kill N          SIGKILLs node N (1-3)
#   start N         starts node N again
#   --dir           where the nodes keep their directories and logs (default ./seglog-cluster)
#   --ports         their quorum (controller) ports (default 19093,19094,19095)
#   --broker-ports  their Kafka listeners' ports (default 29092,29093,29094)
#   --extra-properties  a file of more settings for every node (up only)
#   --secure        (up only) the nodes speak to each other securely: the quorum over SSL with
#                   client certificates, brokers over SASL_SSL (PLAIN) on an INTERNAL listener,
#                   ACLs on with the nodes as super users; clients keep PLAINTEXT on the broker
#                   ports. Certificates from `seglog serve --generate-dev-certs DIR/certs`.
#
# Clients bootstrap from any broker: kcat -b 127.0.0.1:29092 -L
#
# Environment: SEGLOG_BIN, the seglog binary (default target/debug/seglog, built if missing).

set -euo pipefail

command=${1:-}
[ $# -gt 0 ] && shift
node=""
case "$command" in
    kill | start | stop) node=${1:?"$command needs a node number, 1 to 3"}; shift ;;
    up | down | status) ;;
    -h | --help | "") sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown command: $command" >&2; exit 2 ;;
esac
dir=./seglog-cluster
ports=19093,19094,19095
broker_ports=29092,29093,29094
extra_properties=""
secure=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$2; shift ;;
        --ports) ports=$2; shift ;;
        --broker-ports) broker_ports=$2; shift ;;
        --extra-properties) extra_properties=$2; shift ;;
        --secure) secure=1; shift; continue ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
case "$node" in "" | 1 | 2 | 3) ;; *) echo "node $node: only 1, 2 and 3 exist" >&2; exit 2 ;; esac

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seglog=${SEGLOG_BIN:-$repo_root/target/debug/seglog}
if [ ! -x "$seglog" ]; then
    (cd "$repo_root" && cargo build -p seglog) >&2
fi
IFS=, read -r -a port <<<"$ports"
[ ${#port[@]} -eq 3 ] || { echo "--ports needs three ports" >&2; exit 2; }
IFS=, read -r -a broker_port <<<"$broker_ports"
[ ${#broker_port[@]} -eq 3 ] || { echo "--broker-ports needs three ports" >&2; exit 2; }
voters="1@127.0.0.1:${port[0]},2@127.0.0.1:${port[1]},3@127.0.0.1:${port[2]}"

node_dir() { echo "$dir/node-$1"; }

start_node() {
    local n=$1 d
    d=$(node_dir "$n")
    if [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
        echo "node $n is running (pid $(cat "$d/pid"))"
        return
    fi
    nohup "$seglog" serve --config "$d/node.properties" >>"$d/node.log" 2>&1 &
    echo $! >"$d/pid"
    echo "node $n started (pid $!, broker 127.0.0.1:${broker_port[$((n - 1))]}, quorum port ${port[$((n - 1))]}, log $d/node.log)"
}

status_of() {
    "$seglog" cluster status --controller "127.0.0.1:${port[$(($1 - 1))]}" \
        --command-config "$(node_dir "$1")/node.properties"
}

# The settings of --secure: the quorum over SSL (client certificates required), the brokers
# over SASL_SSL on INTERNAL (an ephemeral port, registered as bound), PLAINTEXT for clients.
secure_properties() {
    local certs=$1 password=$2
    cat <<PROPS
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SSL
inter.broker.listener.name=INTERNAL
ssl.keystore.location=$certs/server.pem
ssl.truststore.location=$certs/ca.pem
listener.name.controller.ssl.client.auth=required
listener.name.internal.sasl.enabled.mechanisms=PLAIN
sasl.mechanism.inter.broker.protocol=PLAIN
listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="$password" user_broker="$password";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:broker;User:CN=localhost,O=seglog development
allow.everyone.if.no.acl.found=true
PROPS
}

case "$command" in
    up)
        mkdir -p "$dir"
        cluster_id=""
        if [ -n "$secure" ]; then
            [ -f "$dir/certs/ca.pem" ] || "$seglog" serve --generate-dev-certs "$dir/certs" >/dev/null
            [ -f "$dir/certs/broker.password" ] \
                || (umask 077 && od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$dir/certs/broker.password")
        fi
        for n in 1 2 3; do
            d=$(node_dir "$n")
            mkdir -p "$d"
            cat >"$d/node.properties" <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:${broker_port[$((n - 1))]},${secure:+INTERNAL://127.0.0.1:0,}CONTROLLER://127.0.0.1:${port[$((n - 1))]}
log.dirs=$d/data
metadata.log.dir=$d/metadata
seglog.metrics.listener=
seglog.console.listener=
PROPS
            if [ -n "$secure" ]; then
                certs=$(cd "$dir/certs" && pwd)
                secure_properties "$certs" "$(cat "$certs/broker.password")" >>"$d/node.properties"
                chmod 600 "$d/node.properties"
            fi
            [ -n "$extra_properties" ] && cat "$extra_properties" >>"$d/node.properties"
            if [ ! -f "$d/metadata/meta.properties" ]; then
                cluster_id=${cluster_id:-$("$seglog" format --random-uuid -c "$d/node.properties")}
                "$seglog" format --cluster-id "$cluster_id" --config "$d/node.properties" >/dev/null
            fi
        done
        for n in 1 2 3; do start_node "$n"; done
        for _ in $(seq 1 600); do
            status=$(status_of 1 2>/dev/null || true)
            if grep -q 'CurrentVoters: *\[1,2,3\]' <<<"$status" \
                && grep -q 'MetadataVersion: *14' <<<"$status" \
                && [ "$(grep -c '^Broker: .*epoch [0-9]*$' <<<"$status")" -eq 3 ]; then
                echo "$status"
                exit 0
            fi
            sleep 0.1
        done
        echo "the cluster did not form within 60 s; see $dir/node-*/node.log" >&2
        exit 1
        ;;
    down)
        pids=()
        for n in 1 2 3; do
            d=$(node_dir "$n")
            if [ -f "$d/pid" ] && kill "$(cat "$d/pid")" 2>/dev/null; then
                echo "node $n stopping"
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
            echo "== node $n"
            status_of "$n" || echo "(not answering)"
        done
        ;;
    stop)
        d=$(node_dir "$node")
        if [ -f "$d/pid" ] && kill "$(cat "$d/pid")" 2>/dev/null; then
            pid=$(cat "$d/pid")
            for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            echo "node $node stopped"
        fi
        rm -f "$d/pid"
        ;;
    kill)
        d=$(node_dir "$node")
        [ -f "$d/pid" ] && kill -9 "$(cat "$d/pid")" 2>/dev/null && echo "node $node killed"
        rm -f "$d/pid"
        ;;
    start)
        start_node "$node"
        ;;
esac
