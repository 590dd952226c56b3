#!/usr/bin/env bash
# Run librdkafka's own integration test suite against `seglog serve`.
#
# Usage: scripts/librdkafka-suite.sh [--smoke] [--security MODE] [--cluster [--rf N]]
#                                    [--build-only] [TEST...]
#
#   --smoke       run a short subset of fast produce/consume tests (for CI)
#   --security MODE
#                 plaintext (default) or sasl_ssl: the broker serves SASL_SSL
#                 (SCRAM-SHA-256/512, PLAIN, OAUTHBEARER; ACLs on, allowed where
#                 no ACL names the resource, as trivup's) and SSL with
#                 client certificates required, and the tests connect with
#                 SASL_SSL and SCRAM-SHA-512. OAUTHBEARER tokens are checked
#                 against the JWKS of scripts/oidc-token-endpoint.py (an OAuth
#                 token endpoint on 127.0.0.1, as trivup's OauthbearerOIDCApp;
#                 its subject an ordinary user), no longer as unsecured JWTs.
#                 The security tests (0097 0126 0135 0142) run after the list
#                 (with --smoke: 0135); 0097 runs four times: over SSL (client
#                 certificates required) with a client certificate from a root
#                 CA, the same from an intermediate CA, over SSL with client
#                 certificates requested, and over SASL_SSL; 0126 connects with
#                 OAUTHBEARER and sasl.oauthbearer.method=OIDC, its token URLs
#                 (VALID_OIDC_URL, INVALID_OIDC_URL, EXPIRED_TOKEN_OIDC_URL) and
#                 client keys (OAUTHBEARER_CLIENT_PRIVATE_KEY*) from the endpoint
#                 (it needs librdkafka built with libcurl: without, it skips;
#                 a build without is made again once libcurl's headers are there);
#                 0142 runs twice, with SCRAM and with OAUTHBEARER OIDC, on a
#                 broker restarted with connections.max.reauth.ms=10000
#                 (trivup's default) for it alone (see REAUTH_TESTS)
#   --cluster     run against three nodes of scripts/cluster.sh (each a broker and a
#                 voter; PLAINTEXT only) instead of one broker: the tests bootstrap
#                 from all three and their topics (replication factor 1) spread
#                 over them
#   --rf N        with --cluster: the tests' topics at replication factor N
#                 (1 to 3) instead of 1: the test harness's CreateTopics
#                 (test_create_topic*, the build's one change to test.c, read
#                 from SEGLOG_TEST_REPLICATION_FACTOR) asks N where a test asks
#                 1, and auto-created topics get default.replication.factor=N;
#                 the few tests that call the Admin API themselves keep theirs
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
#   SEGLOG_SSL_PORT        --security sasl_ssl: the SSL listener's port (default: a
#                          free port)
#   SEGLOG_RUST_LOG        the broker's RUST_LOG (default: info,seglog_broker=debug,
#                          which logs why a connection was closed)
#   TEST_CONSUMER_GROUP_PROTOCOL
#                          librdkafka's own switch: "consumer" runs every group
#                          test with group.protocol=consumer (KIP-848)
#
# Prints one line per failed test, per test that skipped itself (not counted as
# passed) and per passed test that skipped some of its sub-tests, and ends with
# "N passed, M failed, S skipped" followed by the failing and the skipped test
# names. Exits 0 iff no test failed.

set -euo pipefail

# Fast tests that need no consumer group: produce + legacy consume (0001,
# 0002, 0012, 0013), every codec (0017), ListOffsets (0031), ApiVersions (0035).
SMOKE_TESTS="0001 0002 0012 0013 0017 0031 0035"
# --security sasl_ssl: librdkafka's security tests, run after the list: SSL
# certificate verification (0097), SASL/OAUTHBEARER OIDC (0126), wrong SASL
# credentials (0135), KIP-368 re-authentication (0142). With --smoke: 0135 only.
SECURITY_TESTS="0097 0126 0135 0142"
SECURITY_SMOKE_TESTS="0135"
# Tests run without -Q: every sub-test of 0126 and 0142 is a SUB_TEST(), which quick mode
# skips without a word (test_sub_start() returns 0), so under -Q they "pass" in 0.1 s
# having run nothing.
NOT_QUICK_TESTS="0126 0142"
# Tests that take minutes by design, given three times the per-test timeout: 0081 walks every
# admin API (about 4 minutes alone on two cores over PLAINTEXT, more over SASL_SSL with its
# authorized-operations cases).
LONG_TESTS="0081"
# --security sasl_ssl: tests run against a broker restarted with connections.max.reauth.ms=10000
# (KIP-368 re-authentication every 10 s; trivup's default), the others with Kafka's default, 0.
# With re-authentication on for the whole list, 0093 fails against any broker whenever the
# client's re-authentication timer fires while its JoinGroup is held (the test holds the group
# for 10 s on purpose): librdkafka queues the SaslHandshake behind that blocking request, never
# sends it, and the test's socket.timeout.ms=3000 expires ("SASL SCRAM-SHA-512 mechanism
# handshake failed: Local: Timed out in queue ... 0 in-flight, 1 out-queue").
REAUTH_TESTS="0142"
REAUTH_MS=10000

smoke=0
cluster=0
rf=1
build_only=0
security=plaintext
tests=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) smoke=1 ;;
        --build-only) build_only=1 ;;
        --cluster) cluster=1 ;;
        --rf)
            [ $# -ge 2 ] || { echo "--rf needs a replication factor" >&2; exit 2; }
            rf=$2
            shift
            ;;
        --security)
            [ $# -ge 2 ] || { echo "--security needs plaintext or sasl_ssl" >&2; exit 2; }
            security=$2
            shift
            ;;
        --security=*) security=${1#--security=} ;;
        -h | --help)
            sed -n '2,60p' "$0" | sed 's/^# \{0,1\}//'
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
[ "$cluster" = 0 ] || [ "$security" = plaintext ] ||
    { echo "--cluster runs over PLAINTEXT only" >&2; exit 2; }
case "$rf" in
    1) ;;
    2 | 3) [ "$cluster" = 1 ] || { echo "--rf $rf needs --cluster" >&2; exit 2; } ;;
    *) echo "--rf takes 1 to 3, not $rf" >&2; exit 2 ;;
esac
case "$security" in
    plaintext | sasl_ssl) ;;
    *)
        echo "unknown --security mode: $security (plaintext or sasl_ssl)" >&2
        exit 2
        ;;
esac

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
# 0142 and 0126 came later: a build without them (no stamp_0142) gets them by patching
# 0142 and 0126 and rebuilding the test-runner alone, and build_id stays what it was, so that
# builds and checkouts that do not know of them keep sharing the build directory.
stamp_0142="$build_dir/.seglog-0126-0142-at-replication-factor-1"
# The same for the harness's replication factor from the environment (--rf).
stamp_rf="$build_dir/.seglog-harness-replication-factor-from-env-2"

# seglog is one broker. 0103 (transactions), 0126 (OIDC) and 0142 (re-authentication) create
# their topics with replication factor 3, which Kafka refuses on one broker too
# (INVALID_REPLICATION_FACTOR); the copies of the tests ask for 1 instead. Nothing else in
# the suite is changed.
patch_tests() {
    local f
    for f in 0103-transactions.c 0126-oauthbearer_oidc.c 0142-reauthentication.c; do
        sed -i 's/test_create_topic_wait_exists(\(.*\), 3, 5000);/test_create_topic_wait_exists(\1, 1, 5000);/' \
            "$build_dir/tests/$f"
        grep -q ', 3, 5000);' "$build_dir/tests/$f" &&
            die "$f still asks for replication factor 3 (the test changed upstream)"
    done
    return 0
}

# test.c's CreateTopics (test_admin_create_topic, behind every test_create_topic*) asks
# SEGLOG_TEST_REPLICATION_FACTOR where a test asks 1, when it is set (--rf), and says so in its
# "Creating topic" line; unset, the harness is librdkafka's. Made from the source's test.c.
patch_harness() {
    local start='^void test_admin_create_topic('
    local body='const char \*\*configs) {'
    local env='getenv("SEGLOG_TEST_REPLICATION_FACTOR")'
    cp "$src/tests/test.c" "$build_dir/tests/test.c"
    grep -q "$start" "$build_dir/tests/test.c" ||
        die "test.c no longer has test_admin_create_topic (the test changed upstream)"
    sed -i "/$start/,/$body/ s/$body/&\n        if (replication_factor == 1 \&\& $env)\n                replication_factor = atoi($env);/" \
        "$build_dir/tests/test.c"
    grep -qF "replication_factor = atoi($env);" "$build_dir/tests/test.c" ||
        die "patching test.c's replication factor failed"
}

# libcurl's headers (libcurl4-openssl-dev), without which librdkafka has no OIDC.
have_libcurl_headers() {
    pkg-config --exists libcurl 2>/dev/null || [ -f /usr/include/curl/curl.h ]
}

build_librdkafka() {
    # --security sasl_ssl needs librdkafka built with SSL: a build made before
    # libssl-dev was installed is made again. The same for OIDC (0126): a build made
    # without libcurl is made again once libcurl's headers are installed.
    if [ -x "$build_dir/tests/test-runner" ] && [ -f "$stamp" ] &&
        [ "$(cat "$stamp")" = "$build_id" ] &&
        { [ "$security" != sasl_ssl ] || grep -q '^#define WITH_SSL 1' "$build_dir/config.h"; } &&
        { [ "$security" != sasl_ssl ] || ! have_libcurl_headers ||
            grep -q '^#define WITH_OAUTHBEARER_OIDC 1' "$build_dir/config.h"; }; then
        if [ ! -f "$stamp_0142" ]; then
            log "patching 0126 and 0142 in $build_dir and rebuilding the test-runner"
            patch_tests
            make -C "$build_dir/tests" -j2 build >"$build_dir.build.log" 2>&1 || {
                tail -n 40 "$build_dir.build.log" >&2
                die "test-runner build failed, see $build_dir.build.log"
            }
            touch "$stamp_0142"
        fi
        if [ ! -f "$stamp_rf" ]; then
            log "patching test.c (the replication factor of --rf) and rebuilding the test-runner"
            patch_harness
            make -C "$build_dir/tests" -j2 build >"$build_dir.build.log" 2>&1 || {
                tail -n 40 "$build_dir.build.log" >&2
                die "test-runner build failed, see $build_dir.build.log"
            }
            touch "$stamp_rf"
        fi
        log "reusing librdkafka build in $build_dir"
        return
    fi
    log "building librdkafka from $src in $build_dir"
    rm -rf "$build_dir"
    mkdir -p "$build_dir"
    cp -R "$src/." "$build_dir/"
    chmod -R u+w "$build_dir"
    patch_tests
    patch_harness
    (
        cd "$build_dir"
        # zstd, lz4, zlib, ssl and curl (OIDC, with ssl) are auto-detected
        # ("try"); GSSAPI, which needs a KDC the suite does not run, is off.
        ./configure --disable-gssapi
        make -j2 libs
        make -C tests -j2 build
    ) >"$build_dir.build.log" 2>&1 || {
        tail -n 40 "$build_dir.build.log" >&2
        die "librdkafka build failed, see $build_dir.build.log"
    }
    echo "$build_id" >"$stamp"
    touch "$stamp_0142" "$stamp_rf"
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
    if [ "$security" = sasl_ssl ]; then
        if [ "$smoke" = 1 ]; then
            read -r -a extra <<<"$SECURITY_SMOKE_TESTS"
        else
            read -r -a extra <<<"$SECURITY_TESTS"
        fi
        tests+=("${extra[@]}")
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
rm -f "$logs"/[0-9][0-9][0-9][0-9]*.log "$logs/broker.log"
data_dir=$(mktemp -d "${TMPDIR:-/tmp}/seglog-librdkafka-data.XXXXXX")
# This run's files: the client config (per run, so runs sharing a build directory do not
# point each other's tests at the wrong broker) and, with --security, the certificates.
work_dir=$(mktemp -d "${TMPDIR:-/tmp}/seglog-librdkafka-run.XXXXXX")
test_conf="$work_dir/test.conf"
broker_log="$logs/broker.log"
broker_pid=""
oidc_pid=""

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    if [ -n "$oidc_pid" ] && kill -0 "$oidc_pid" 2>/dev/null; then
        kill -TERM "$oidc_pid" 2>/dev/null || true
        wait "$oidc_pid" 2>/dev/null || true
    fi
    if [ "$cluster" = 1 ]; then
        stop_broker
    elif [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
        kill -TERM "$broker_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$broker_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$broker_pid" 2>/dev/null || true
        wait "$broker_pid" 2>/dev/null || true
    fi
    rm -rf "$data_dir" "$work_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------
# --security sasl_ssl: certificates, the SCRAM user, the broker's settings.
# ---------------------------------------------------------------------------

# The test user: a SCRAM user of the broker, and not a super user: as in trivup's SASL
# clusters (super.users=User:admin, allow.everyone.if.no.acl.found=true), what no ACL names is
# allowed, and an ACL the tests create narrows what the user may do (0081's authorized
# operations expect exactly the ACL's).
sasl_user=seglog-test
sasl_password=seglog-test-secret
# The password of the client's encrypted key and PKCS#12 file (trivup's ssl.key.password).
client_key_password=seglog-client-key-pass
# The OAuth token endpoint's tokens (scripts/oidc-token-endpoint.py): the broker's SASL_SSL
# listener checks their signature against its JWKS file, their issuer and audience; their
# subject is the principal, an ordinary user as the SCRAM test user is.
oidc_issuer=seglog-oidc-issuer
oidc_audience=seglog
oidc_subject=seglog-oidc
oidc_client_key_password=seglog-oidc-client-key-pass
oidc_url=""

# start_oidc_endpoint DIR: starts scripts/oidc-token-endpoint.py (its key, JWKS and client keys
# in DIR) and sets oidc_url to its token URL.
start_oidc_endpoint() {
    local dir=$1
    mkdir -p "$dir"
    python3 "$script_dir/oidc-token-endpoint.py" --port-file "$dir/port" \
        --jwks-file "$dir/jwks.json" --key-dir "$dir/key" --client-key-dir "$dir/client" \
        --client-key-password "$oidc_client_key_password" --issuer "$oidc_issuer" \
        --audience "$oidc_audience" --subject "$oidc_subject" >"$logs/oidc-endpoint.log" 2>&1 &
    oidc_pid=$!
    for _ in $(seq 1 100); do
        [ -s "$dir/port" ] && break
        kill -0 "$oidc_pid" 2>/dev/null || {
            tail -n 20 "$logs/oidc-endpoint.log" >&2
            die "the OAuth token endpoint exited during startup"
        }
        sleep 0.1
    done
    [ -s "$dir/port" ] || die "the OAuth token endpoint did not start within 10s"
    oidc_url="http://127.0.0.1:$(cat "$dir/port")/retrieve"
}

# make_client_pki DIR DEV_CA: the CLIENT's certificates for 0097, in every form trivup's
# SslApp writes and 0097 reads through its SSL_* variables, made with openssl. A root CA and
# an intermediate CA of the clients (the broker's SSL listener trusts the root; the broker's
# own certificate comes from `seglog serve --generate-dev-certs`, its CA is DEV_CA); two
# client certificates, "librdkafka-root" signed by the root and "librdkafka-intermediate"
# signed by the intermediate; each with the key encrypted (PKCS#8 PEM and DER), the
# certificate (PEM with the chain, and DER) and a PKCS#12 file of key, chain and the CAs
# that verify the broker. The broker's key stays an unencrypted PEM.
make_client_pki() {
    local dir=$1 dev_ca=$2 pass=$client_key_password name issuer
    mkdir -p "$dir"
    cat >"$dir/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
CNF
    (
        cd "$dir"
        set -e
        openssl req -x509 -config openssl.cnf -extensions ca -newkey rsa:2048 -nodes \
            -keyout root-ca.key -out root-ca.pem -days 30 \
            -subj "/O=seglog librdkafka-suite/CN=seglog test client root CA"
        openssl req -new -config openssl.cnf -newkey rsa:2048 -nodes \
            -keyout intermediate-ca.key -out intermediate-ca.csr \
            -subj "/O=seglog librdkafka-suite/CN=seglog test client intermediate CA"
        openssl x509 -req -in intermediate-ca.csr -CA root-ca.pem -CAkey root-ca.key \
            -set_serial 2 -days 30 -extfile openssl.cnf -extensions ca -out intermediate-ca.pem
        for name in root intermediate; do
            issuer=root-ca
            [ "$name" = intermediate ] && issuer=intermediate-ca
            openssl req -new -config openssl.cnf -newkey rsa:2048 -nodes \
                -keyout "$name.key" -out "$name.csr" \
                -subj "/O=seglog librdkafka-suite/CN=librdkafka-$name"
            openssl x509 -req -in "$name.csr" -CA "$issuer.pem" -CAkey "$issuer.key" \
                -set_serial "$RANDOM$RANDOM" -days 30 -extfile openssl.cnf -extensions client \
                -out "$name.leaf.pem"
            # The certificate as the client sends it: the leaf, then the intermediate.
            cp "$name.leaf.pem" "$name.pem"
            [ "$name" = intermediate ] && cat intermediate-ca.pem >>"$name.pem"
            openssl x509 -in "$name.leaf.pem" -outform DER -out "$name.der"
            openssl pkcs8 -topk8 -in "$name.key" -v2 aes-256-cbc \
                -passout "pass:$pass" -out "$name.key.pem"
            openssl pkcs8 -topk8 -in "$name.key" -v2 aes-256-cbc -outform DER \
                -passout "pass:$pass" -out "$name.key.der"
            # PKCS#12: key, certificate, its chain, and the CA that signed the broker's
            # certificate (0097 also loads this file as the CA store).
            cat "$dev_ca" >"$name.cas.pem"
            [ "$name" = intermediate ] && cat intermediate-ca.pem >>"$name.cas.pem"
            openssl pkcs12 -export -inkey "$name.key" -in "$name.leaf.pem" \
                -certfile "$name.cas.pem" -name "librdkafka-$name" \
                -passout "pass:$pass" -out "$name.p12"
            rm -f "$name.csr" "$name.key"
        done
        openssl x509 -in "$dev_ca" -outform DER -out ca.der
        # Every CA: the broker's, the clients' root and intermediate (SSL_all_cas_pem).
        cat "$dev_ca" root-ca.pem intermediate-ca.pem >all-cas.pem
        # The SSL listener's truststore: the clients' root CA and the development CA.
        cat root-ca.pem "$dev_ca" >truststore.pem
    ) >"$dir/openssl.log" 2>&1 || {
        tail -n 20 "$dir/openssl.log" >&2
        die "openssl could not make the client certificates (see above)"
    }
}

ssl_port=""
requested_port=""
certs="$work_dir/certs"
# The authorizer is on in every mode, as in trivup's clusters, so that 0081's ACL Admin API
# cases (CreateAcls, DescribeAcls, DeleteAcls) get answers rather than SECURITY_DISABLED, as
# from Kafka without authorizer.class.name. Over PLAINTEXT every client is User:ANONYMOUS,
# allowed where no ACL names the resource (allow.everyone.if.no.acl.found=true).
broker_args=(--listener "127.0.0.1:$port" --override num.partitions=4
    --override authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
    --override allow.everyone.if.no.acl.found=true)
if [ "$security" = sasl_ssl ]; then
    command -v openssl >/dev/null || die "--security sasl_ssl needs the openssl command"
    grep -q '^#define WITH_SSL 1' "$build_dir/config.h" 2>/dev/null ||
        die "librdkafka in $build_dir was built without SSL (install libssl-dev, remove $build_dir, rerun)"
    ssl_port="${SEGLOG_SSL_PORT:-$(pick_port)}"
    requested_port=$(pick_port)
    "$seglog_bin" serve --generate-dev-certs "$certs" >"$work_dir/dev-certs.log" 2>&1 ||
        die "seglog serve --generate-dev-certs failed: $(tail -n 3 "$work_dir/dev-certs.log")"
    make_client_pki "$certs/client" "$certs/ca.pem"
    oidc_dir="$work_dir/oidc"
    start_oidc_endpoint "$oidc_dir"
    log "OAuth token endpoint: $oidc_url (log: $logs/oidc-endpoint.log)"
    "$seglog_bin" users add --log-dir "$data_dir" --user "$sasl_user" \
        --password "$sasl_password" >"$work_dir/users.log" 2>&1 ||
        die "seglog users add failed: $(tail -n 3 "$work_dir/users.log")"
    cat >"$work_dir/server.properties" <<PROPS
# Generated by seglog scripts/librdkafka-suite.sh --security sasl_ssl
listeners=SASL_SSL://127.0.0.1:$port,SSL://127.0.0.1:$ssl_port,REQUESTED://127.0.0.1:$requested_port
listener.security.protocol.map=SASL_SSL:SASL_SSL,SSL:SSL,REQUESTED:SSL
ssl.keystore.type=PEM
ssl.keystore.location=$certs/server.pem
listener.name.ssl.ssl.truststore.type=PEM
listener.name.ssl.ssl.truststore.location=$certs/client/truststore.pem
listener.name.ssl.ssl.client.auth=required
listener.name.ssl.ssl.enabled.protocols=TLSv1.2
listener.name.requested.ssl.truststore.type=PEM
listener.name.requested.ssl.truststore.location=$certs/client/truststore.pem
listener.name.requested.ssl.client.auth=requested
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER
listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=file:$oidc_dir/jwks.json
listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.issuer=$oidc_issuer
listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.audience=$oidc_audience
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=true
num.partitions=4
PROPS
    broker_args=(--config "$work_dir/server.properties")
fi

# start_broker [ARG...]: starts `seglog serve` with broker_args and ARGs on data_dir (appending
# to broker_log) and waits for its ports; stop_broker stops it.
start_broker() {
    log "starting $seglog_bin on 127.0.0.1:$port${ssl_port:+ (SASL_SSL; SSL on $ssl_port, SSL with client certificates requested on $requested_port)}${1:+ with $*} (log: $broker_log)"
    # The suite's "default" scenario (tests/scenarios/default.json) is a
    # cluster with auto topic creation and num.partitions=4.
    RUST_LOG="${SEGLOG_RUST_LOG:-info,seglog_broker=debug}" \
        "$seglog_bin" serve "${broker_args[@]}" "$@" --log-dir "$data_dir" \
        --metrics-listener '' --console-listener '' >>"$broker_log" 2>&1 &
    broker_pid=$!
    local p
    for p in "$port" $ssl_port $requested_port; do
        for _ in $(seq 1 100); do
            port_open "$p" && break
            kill -0 "$broker_pid" 2>/dev/null || {
                tail -n 20 "$broker_log" >&2
                die "broker exited during startup"
            }
            sleep 0.1
        done
        port_open "$p" || die "broker did not listen on port $p within 10s"
    done
}
stop_broker() {
    [ -n "$broker_pid" ] || return 0
    kill -TERM "$broker_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$broker_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$broker_pid" 2>/dev/null || true
    wait "$broker_pid" 2>/dev/null || true
    broker_pid=""
}
# brokers_alive: whether the broker (every node of the cluster) still runs.
brokers_alive() {
    kill -0 "$broker_pid" 2>/dev/null
}
broker_list="127.0.0.1:$port"
if [ "$cluster" = 1 ]; then
    cluster_dir="$work_dir/cluster"
    cluster_ports="$(pick_port),$(pick_port),$(pick_port)"
    broker_ports="$port,$(pick_port),$(pick_port)"
    broker_list="127.0.0.1:${broker_ports//,/,127.0.0.1:}"
    # The same settings as the single broker's, for every node.
    cat >"$work_dir/cluster-extra.properties" <<PROPS
num.partitions=4
default.replication.factor=$rf
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=true
PROPS
    [ "$rf" = 1 ] || export SEGLOG_TEST_REPLICATION_FACTOR=$rf
    cluster_cmd() {
        RUST_LOG="${SEGLOG_RUST_LOG:-info,seglog_broker=debug}" SEGLOG_BIN="$seglog_bin" \
            bash "$script_dir/cluster.sh" "$@" --dir "$cluster_dir" --ports "$cluster_ports" \
            --broker-ports "$broker_ports" --extra-properties "$work_dir/cluster-extra.properties"
    }
    start_broker() {
        log "starting three nodes of scripts/cluster.sh (topics at replication factor $rf), brokers on $broker_list (logs: $cluster_dir/node-*/node.log)"
        cluster_cmd up >>"$broker_log" 2>&1 || {
            tail -n 20 "$cluster_dir"/node-*/node.log >&2
            die "the cluster did not start"
        }
        broker_pid=$(cat "$cluster_dir/node-1/pid")
    }
    stop_broker() {
        [ -n "$broker_pid" ] || return 0
        cluster_cmd down >>"$broker_log" 2>&1 || true
        broker_pid=""
    }
    brokers_alive() {
        local n
        for n in 1 2 3; do
            kill -0 "$(cat "$cluster_dir/node-$n/pid" 2>/dev/null || echo 0)" 2>/dev/null || return 1
        done
    }
fi
start_broker
broker_reauth_ms=0

# ---------------------------------------------------------------------------
# Run the tests, one test-runner invocation per test number.
# ---------------------------------------------------------------------------

tests_dir="$build_dir/tests"
cat >"$test_conf" <<CONF
# Generated by seglog scripts/librdkafka-suite.sh
metadata.broker.list=$broker_list
test.topic.random=true
CONF
if [ "$security" = sasl_ssl ]; then
    cat >>"$test_conf" <<CONF
security.protocol=SASL_SSL
sasl.mechanisms=SCRAM-SHA-512
sasl.username=$sasl_user
sasl.password=$sasl_password
ssl.ca.location=$certs/ca.pem
CONF
fi

# ssl_variant NAME CONF_FILE -> writes CONF_FILE (0097's client config) and sets ssl_env to
# the SSL_* variables trivup's LibrdkafkaTestApp exports: "ssl" (the SSL listener, a client
# certificate from the root CA), "ssl-intermediate" (the same from the intermediate CA:
# SSL_intermediate_pub_pem set, so 0097 skips its DER cases, as with trivup's
# ssl_intermediate_ca), "ssl-requested" (the REQUESTED listener, ssl.client.auth=requested,
# as trivup's ssl_client_auth=requested: an untrusted certificate is not sent and the client
# connects as User:ANONYMOUS) and "sasl_ssl" (the SASL_SSL listener with the root CA's
# certificate; it asks for none, so 0097 expects even the untrusted certificates to connect).
ssl_env=()
ssl_variant() {
    local variant=$1 conf=$2 c="$certs/client" key=root to=$ssl_port auth=required
    [ "$variant" = ssl-intermediate ] && key=intermediate
    [ "$variant" = ssl-requested ] && to=$requested_port auth=requested
    if [ "$variant" = sasl_ssl ]; then
        cp "$test_conf" "$conf"
    else
        cat >"$conf" <<CONF
# Generated by seglog scripts/librdkafka-suite.sh: 0097 over SSL, client certificates $auth
metadata.broker.list=127.0.0.1:$to
test.topic.random=true
security.protocol=SSL
ssl.ca.location=$certs/ca.pem
CONF
    fi
    cat >>"$conf" <<CONF
ssl.certificate.location=$c/$key.pem
ssl.key.location=$c/$key.key.pem
ssl.key.password=$client_key_password
CONF
    ssl_env=(
        "SSL_ca_pem=$certs/ca.pem" "SSL_ca_der=$c/ca.der" "SSL_all_cas_pem=$c/all-cas.pem"
        "SSL_client_auth=$auth" "SSL_password=$client_key_password"
        "SSL_pkcs=$c/$key.p12"
        "SSL_pub_pem=$c/$key.pem" "SSL_pub_der=$c/$key.der"
        "SSL_priv_pem=$c/$key.key.pem" "SSL_priv_der=$c/$key.key.der"
    )
    [ "$key" = intermediate ] && ssl_env+=("SSL_intermediate_pub_pem=$c/intermediate-ca.pem")
    return 0
}

# oidc_variant CONF_FILE TOKEN_URL -> writes CONF_FILE (0126's client config: the suite's, with
# OAUTHBEARER and sasl.oauthbearer.method=OIDC instead of SCRAM, as trivup's LibrdkafkaTestApp
# writes it with an OauthbearerOIDCApp) and sets oidc_env to the variables trivup exports.
# librdkafka does OIDC only when built with libcurl; without, 0126 gets the suite's config and
# skips itself ("`sasl.oauthbearer.method=OIDC` is required").
oidc_env=()
oidc_variant() {
    local conf=$1 url=$2 c="$oidc_dir/client"
    if ! grep -q '^#define WITH_OAUTHBEARER_OIDC 1' "$build_dir/config.h" 2>/dev/null; then
        log "librdkafka in $build_dir was built without libcurl, so without OIDC: 0126 will skip itself (install libcurl4-openssl-dev and rerun: the build is made again)"
        cp "$test_conf" "$conf"
        return 0
    fi
    grep -v '^sasl\.' "$test_conf" >"$conf"
    cat >>"$conf" <<CONF
sasl.mechanisms=OAUTHBEARER
sasl.oauthbearer.method=OIDC
sasl.oauthbearer.client.id=123
sasl.oauthbearer.client.secret=abc
sasl.oauthbearer.scope=test
sasl.oauthbearer.extensions=ExtensionworkloadIdentity=develC348S,Extensioncluster=lkc123
sasl.oauthbearer.token.endpoint.url=$url
CONF
    oidc_env=(
        "VALID_OIDC_URL=$oidc_url" "INVALID_OIDC_URL=$oidc_url/badformat"
        "EXPIRED_TOKEN_OIDC_URL=$oidc_url/expire"
        "OAUTHBEARER_CLIENT_PRIVATE_KEY=$c/client.key.pem"
        "OAUTHBEARER_CLIENT_PRIVATE_KEY_ENCRYPTED=$c/client.key.enc.pem"
        "OAUTHBEARER_CLIENT_PRIVATE_KEY_PASSWORD=$oidc_client_key_password"
    )
}

# The runs: "TEST" or, for 0097 with --security sasl_ssl, "0097/VARIANT".
runs=()
for t in "${tests[@]}"; do
    if [ "$security" = sasl_ssl ] && [ "$t" = 0097 ]; then
        runs+=(0097/ssl 0097/ssl-intermediate 0097/ssl-requested 0097/sasl_ssl)
    elif [ "$security" = sasl_ssl ] && [ "$t" = 0142 ]; then
        # SCRAM runs the SCRAM sub-tests (the OAUTHBEARER ones skip themselves), OIDC the
        # OAUTHBEARER ones with tokens from the endpoint (the SCRAM ones skip themselves).
        runs+=(0142 0142/oidc)
    else
        runs+=("$t")
    fi
done

read -r -a test_args <<<"${LIBRDKAFKA_TEST_ARGS:--Q -E}"
timeout_s="${LIBRDKAFKA_TEST_TIMEOUT:-300}"
passed=0
failed=()
skipped=()
partial=()

for run in "${runs[@]}"; do
    t=${run%%/*}
    variant=""
    [ "$run" != "$t" ] && variant=${run#*/}
    out="$logs/$t${variant:+-$variant}.log"
    conf="$test_conf"
    ssl_env=()
    oidc_env=()
    if [ "$variant" = oidc ]; then
        # 0142 over OAUTHBEARER OIDC. With the endpoint's 4-second tokens (for 0126) each
        # session would end with its token: a client that connects with a token it fetched
        # seconds ago has a session of a few milliseconds, is closed at its next request (as
        # by Kafka) and the test counts that as lost connections; /retrieve/long's tokens
        # outlive connections.max.reauth.ms, so the sessions end at re-authentication.
        conf="$work_dir/test-oidc-long.conf"
        oidc_variant "$conf" "$oidc_url/long"
    elif [ -n "$variant" ]; then
        conf="$work_dir/test-$variant.conf"
        ssl_variant "$variant" "$conf"
    elif [ "$security" = sasl_ssl ] && [ "$t" = 0126 ]; then
        conf="$work_dir/test-oidc.conf"
        oidc_variant "$conf" "$oidc_url"
    fi
    want_reauth_ms=0
    if [ "$security" = sasl_ssl ]; then
        case " $REAUTH_TESTS " in *" $t "*) want_reauth_ms=$REAUTH_MS ;; esac
    fi
    if [ "$want_reauth_ms" != "$broker_reauth_ms" ]; then
        log "restarting the broker with connections.max.reauth.ms=$want_reauth_ms for $run"
        stop_broker
        start_broker --override "connections.max.reauth.ms=$want_reauth_ms"
        broker_reauth_ms=$want_reauth_ms
    fi
    # 0097's "verify not ok" cases expect librdkafka's _SSL error. When the broker's
    # answer to the ClientHello is already there as SSL_connect() first reads, librdkafka
    # reports the failed verification from its connect path as _TRANSPORT instead, and the
    # test fails: seglog answers within the same time slice when it shares a CPU with the
    # client. Its runs keep the broker and the client on different CPUs.
    pin=()
    if [ "$t" = 0097 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
        taskset -a -p -c 0 "$broker_pid" >/dev/null 2>&1 && pin=(taskset -c 1)
    fi
    args=("${test_args[@]}")
    case " $NOT_QUICK_TESTS " in
        *" $t "*)
            args=()
            for a in "${test_args[@]}"; do [ "$a" = -Q ] || args+=("$a"); done
            ;;
    esac
    test_timeout_s=$timeout_s
    case " $LONG_TESTS " in
        *" $t "*) test_timeout_s=$((3 * timeout_s)) ;;
    esac
    start=$SECONDS
    log "test $run ..."
    rc=0
    (
        cd "$tests_dir"
        ${pin[@]+"${pin[@]}"} env ${ssl_env[@]+"${ssl_env[@]}"} ${oidc_env[@]+"${oidc_env[@]}"} \
            TESTS=$t TEST_KAFKA_VERSION=3.9.0 RDKAFKA_GITVER=seglog RDKAFKA_TEST_CONF="$conf" \
            timeout -k 10 "$test_timeout_s" ./run-test.sh ${args[@]+"${args[@]}"}
    ) >"$out" 2>&1 </dev/null || rc=$?
    dur=$((SECONDS - start))
    [ ${#pin[@]} -gt 0 ] && taskset -a -p -c "0-$(($(nproc) - 1))" "$broker_pid" >/dev/null 2>&1
    if ! brokers_alive; then
        echo "FAIL $run (broker died; see $broker_log)"
        failed+=("$run")
        break
    fi
    plain=$(sed 's/\x1b\[[0-9;]*m//g' "$out")
    if [ "$rc" = 0 ]; then
        # A test that skips itself exits 0. The runner's closing table has a row per test
        # function ("| 0031_get_offsets_mock | SKIPPED | 0.000s | <reason> |"); a run whose
        # functions all skipped is a skip, one with some skipped a pass that says which.
        # SUB_TEST_SKIP prints "[ <sub-test>: SKIP: <reason> ]".
        rows=$(awk -F'|' '$3 ~ /^ *(PASSED|SKIPPED|FAILED) *$/ && $2 !~ /<MAIN>/ {
            gsub(/ /, "", $2); gsub(/ /, "", $3); r = $5; gsub(/^ +| +$/, "", r)
            print $3 "|" $2 "|" r }' <<<"$plain")
        n_run=$(grep -c . <<<"$rows" || true)
        n_skip=$(grep -c '^SKIPPED|' <<<"$rows" || true)
        skip_what=$(grep '^SKIPPED|' <<<"$rows" | cut -d'|' -f2- | sed 's/|/: /' | paste -sd';' - || true)
        subs=$(grep -c ': SKIP: ' <<<"$plain" || true)
        if [ "$n_skip" -gt 0 ] && [ "$n_skip" = "$n_run" ]; then
            echo "SKIP $run (${dur}s): ${skip_what:0:300} [log: $out]"
            skipped+=("$run")
        else
            passed=$((passed + 1))
            log "test $run passed (${dur}s)"
            if [ "$n_skip" -gt 0 ] || [ "$subs" -gt 0 ]; then
                first=$(awk '/: SKIP: /{ sub(/^.*\[ /, ""); sub(/ \]$/, ""); print; exit }' <<<"$plain")
                echo "PASS $run (${dur}s), partly skipped:${skip_what:+ ${skip_what:0:200};}${first:+ $subs sub-test(s) skipped, first: ${first:0:200}} [log: $out]"
                partial+=("$run")
            fi
        fi
    else
        # The first failure message: the line after '### Test "..." failed at'.
        reason=$(awk '/^### Test ".*" failed at / { getline; print; exit }' <<<"$plain" |
            cut -c1-200 || true)
        [ "$rc" = 124 ] && reason="timed out after ${test_timeout_s}s"
        echo "FAIL $run (${dur}s): ${reason:-exit code $rc} [log: $out]"
        failed+=("$run")
    fi
done

echo "$passed passed, ${#failed[@]} failed, ${#skipped[@]} skipped (security: $security$([ "$cluster" = 1 ] && echo ', three nodes'))"
[ ${#skipped[@]} -gt 0 ] && echo "skipped: ${skipped[*]}"
[ ${#partial[@]} -gt 0 ] && echo "passed with sub-tests skipped: ${partial[*]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "${failed[*]}"
    exit 1
fi
exit 0
