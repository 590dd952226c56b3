/*
 * txn-bench: produce throughput of an idempotent librdkafka producer, with or
 * without transactions. Built and run by scripts/broker-bench.sh
 * (BENCH_MODE=transactional); see its usage().
 *
 *   txn-bench -b HOST:PORT -t TOPIC [-p PARTITION] [-s SIZE] -c COUNT
 *             [-k RECORDS_PER_TXN] [-i TRANSACTIONAL_ID] [-l LINGER_MS]
 *             [-B BATCH_SIZE] [-w TIMEOUT_MS] [-X key=value ...] [-v]
 *
 * COUNT records of SIZE bytes (no key) go to TOPIC, to PARTITION or, with
 * -p -1 (the default), to all of its partitions round-robin. The producer runs
 * with acks=all and enable.idempotence=true. With -k 0 (the default) there are
 * no transactions: everything is produced, then flushed. With -k K > 0 the
 * producer is transactional: init_transactions once, then per transaction
 * begin_transaction, K produce calls (fewer in the last one), and
 * commit_transaction, which flushes them.
 *
 * The clock runs from the first produce call to the last acknowledgement
 * (the final flush or commit); the topic's metadata (which may create it) and
 * the producer id (init_transactions, or a warm-up record without
 * transactions, so the topic gets COUNT + 1 records) come before it. On success it prints one line on stdout:
 *
 *   records=N bytes=B seconds=X records_per_s=R mb_per_s=M txns=C
 *
 * with MB = 10^6 payload bytes, as rdkafka_performance counts them. -v also
 * prints on stderr the seconds spent in begin_transaction, in the produce
 * calls and in commit_transaction (or the final flush). Any error
 * (a failed delivery, a fatal producer error, a failed transactional call of
 * any kind) is printed on stderr and the exit code is 1; nothing is retried
 * here beyond what librdkafka does by itself. Bad usage exits with 2.
 */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdkafka.h"

static volatile sig_atomic_t interrupted;
static long long n_delivered;
static long long n_failed;
static char first_failure[512];
static volatile int fatal_seen;

static void on_signal(int sig) {
        (void)sig;
        interrupted = 1;
}

static void fail(const char *fmt, ...) {
        va_list ap;
        fputs("txn-bench: error: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(1);
}

static void usage_exit(const char *why) {
        if (why)
                fprintf(stderr, "txn-bench: %s\n", why);
        fprintf(stderr,
                "usage: txn-bench -b HOST:PORT -t TOPIC [-p PARTITION|-1] "
                "[-s SIZE] -c COUNT [-k RECORDS_PER_TXN] [-i TXN_ID] "
                "[-l LINGER_MS] [-B BATCH_SIZE] [-w TIMEOUT_MS] "
                "[-X key=value ...] [-v]\n");
        exit(2);
}

static long long parse_num(const char *s, const char *what, long long min) {
        char *end;
        long long v;
        errno = 0;
        v     = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < min) {
                char msg[256];
                snprintf(msg, sizeof(msg), "bad %s '%s'", what, s);
                usage_exit(msg);
        }
        return v;
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set_conf(rd_kafka_conf_t *conf, const char *name,
                     const char *value) {
        char errstr[512];
        if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK)
                fail("config %s=%s: %s", name, value, errstr);
}

/* Called from rd_kafka_poll/flush/commit_transaction on this thread. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                n_delivered++;
                return;
        }
        if (n_failed++ == 0)
                snprintf(first_failure, sizeof(first_failure),
                         "delivery to partition %" PRId32 " failed: %s",
                         m->partition, rd_kafka_err2str(m->err));
}

static void on_error(rd_kafka_t *rk, int err, const char *reason,
                     void *opaque) {
        (void)opaque;
        if (err == RD_KAFKA_RESP_ERR__FATAL) {
                char buf[512];
                rd_kafka_resp_err_t orig =
                    rd_kafka_fatal_error(rk, buf, sizeof(buf));
                fprintf(stderr, "txn-bench: fatal producer error %s: %s\n",
                        rd_kafka_err2name(orig), buf);
                fatal_seen = 1;
                return;
        }
        /* Transient (e.g. a connection that comes back): librdkafka retries. */
        fprintf(stderr, "txn-bench: client error %s: %s\n",
                rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

/* Prints a failed transactional call and exits 1. */
static void txn_failed(rd_kafka_t *rk, const char *call,
                       rd_kafka_error_t *error) {
        int abortable = rd_kafka_error_txn_requires_abort(error);
        fprintf(stderr,
                "txn-bench: error: %s: %s: %s (fatal=%d retriable=%d "
                "requires_abort=%d)\n",
                call, rd_kafka_error_name(error), rd_kafka_error_string(error),
                rd_kafka_error_is_fatal(error),
                rd_kafka_error_is_retriable(error), abortable);
        rd_kafka_error_destroy(error);
        if (n_failed)
                fprintf(stderr, "txn-bench: error: %s (%lld records failed)\n",
                        first_failure, n_failed);
        if (abortable) {
                /* Leave the broker with no open transaction; the run has
                 * failed either way. */
                rd_kafka_error_t *e = rd_kafka_abort_transaction(rk, 10000);
                if (e) {
                        fprintf(stderr,
                                "txn-bench: abort_transaction: %s: %s\n",
                                rd_kafka_error_name(e),
                                rd_kafka_error_string(e));
                        rd_kafka_error_destroy(e);
                }
        }
        exit(1);
}

/* Number of partitions of TOPIC, once each has a leader; the metadata
 * request may create the topic. */
static int partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        double deadline       = now_s() + timeout_ms / 1000.0;
        rd_kafka_resp_err_t last;
        if (!rkt)
                fail("topic %s: %s", topic,
                     rd_kafka_err2str(rd_kafka_last_error()));
        for (;;) {
                const struct rd_kafka_metadata *md;
                int n = 0;
                last  = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
                if (last == RD_KAFKA_RESP_ERR_NO_ERROR) {
                        if (md->topic_cnt == 1) {
                                last = md->topics[0].err;
                                if (last == RD_KAFKA_RESP_ERR_NO_ERROR)
                                        n = md->topics[0].partition_cnt;
                                /* Wait for every partition's leader too. */
                                for (int i = 0; i < n; i++)
                                        if (md->topics[0].partitions[i].err ||
                                            md->topics[0].partitions[i].leader <
                                                0)
                                                n = 0;
                        }
                        rd_kafka_metadata_destroy(md);
                }
                if (n > 0) {
                        rd_kafka_topic_destroy(rkt);
                        return n;
                }
                if (interrupted || now_s() > deadline)
                        fail("no partitions for topic %s: %s", topic,
                             rd_kafka_err2str(last));
                usleep(200 * 1000);
        }
}

/* One produce call; waits (serving delivery reports) while the queue is
 * full. */
static void produce_one(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t part,
                        char *payload, size_t size) {
        for (;;) {
                if (rd_kafka_produce(rkt, part, 0, payload, size, NULL, 0,
                                     NULL) == 0)
                        return;
                rd_kafka_resp_err_t err = rd_kafka_last_error();
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        fail("produce: %s", rd_kafka_err2str(err));
                rd_kafka_poll(rk, 10);
                if (fatal_seen || interrupted)
                        fail("stopped while the queue was full (%s)",
                             fatal_seen ? "fatal error" : "interrupted");
        }
}

int main(int argc, char **argv) {
        const char *brokers = NULL, *topic = NULL, *txn_id = NULL;
        long long count = -1, size = 1024, per_txn = 0, partition = -1;
        long long linger_ms = 5, batch_size = 1000000, timeout_ms = 60000;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char errstr[512], buf[64], gen_id[128];
        int opt, verbose = 0;
        /* -v: seconds spent in each phase, on stderr. */
        double in_begin = 0, in_produce = 0, in_end = 0;

        while ((opt = getopt(argc, argv, "b:t:p:s:c:k:i:l:B:w:X:vh")) != -1) {
                switch (opt) {
                case 'b':
                        brokers = optarg;
                        break;
                case 't':
                        topic = optarg;
                        break;
                case 'p':
                        partition = parse_num(optarg, "partition", -1);
                        break;
                case 's':
                        size = parse_num(optarg, "size", 0);
                        break;
                case 'c':
                        count = parse_num(optarg, "count", 1);
                        break;
                case 'k':
                        per_txn = parse_num(optarg, "records per txn", 0);
                        break;
                case 'i':
                        txn_id = optarg;
                        break;
                case 'l':
                        linger_ms = parse_num(optarg, "linger.ms", 0);
                        break;
                case 'B':
                        batch_size = parse_num(optarg, "batch.size", 1);
                        break;
                case 'w':
                        timeout_ms = parse_num(optarg, "timeout", 1);
                        break;
                case 'X': {
                        char *eq = strchr(optarg, '=');
                        if (!eq || eq == optarg)
                                usage_exit("-X wants key=value");
                        *eq = '\0';
                        set_conf(conf, optarg, eq + 1);
                        *eq = '=';
                        break;
                }
                case 'v':
                        verbose = 1;
                        break;
                case 'h':
                        usage_exit(NULL);
                        break;
                default:
                        usage_exit("unknown option");
                }
        }
        if (optind != argc)
                usage_exit("unexpected arguments");
        if (!brokers || !topic || count < 1)
                usage_exit("-b, -t and -c are required");
        if (partition > INT32_MAX || size > 1000000000 || timeout_ms > INT32_MAX)
                usage_exit("value out of range");

        set_conf(conf, "bootstrap.servers", brokers);
        set_conf(conf, "acks", "all");
        set_conf(conf, "enable.idempotence", "true");
        snprintf(buf, sizeof(buf), "%lld", linger_ms);
        set_conf(conf, "linger.ms", buf);
        snprintf(buf, sizeof(buf), "%lld", batch_size);
        set_conf(conf, "batch.size", buf);
        if (per_txn > 0) {
                if (!txn_id) {
                        snprintf(gen_id, sizeof(gen_id),
                                 "txn-bench-%ld-%lld", (long)getpid(),
                                 (long long)time(NULL));
                        txn_id = gen_id;
                }
                set_conf(conf, "transactional.id", txn_id);
        }
        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
        rd_kafka_conf_set_error_cb(conf, on_error);

        rd_kafka_t *rk =
            rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk)
                fail("creating the producer: %s", errstr);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);

        /* Outside the clock: the topic's creation (it may be new) and its
         * metadata. */
        int nparts = partition_count(rk, topic, (int)timeout_ms);
        if (partition >= nparts)
                fail("topic %s has %d partitions, no partition %lld", topic,
                     nparts, partition);
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        if (!rkt)
                fail("topic %s: %s", topic,
                     rd_kafka_err2str(rd_kafka_last_error()));

        /* One payload for every record, never freed or copied (as
         * rdkafka_performance does without -l). */
        char *payload = malloc(size > 0 ? (size_t)size : 1);
        if (!payload)
                fail("out of memory");
        for (long long i = 0; i < size; i++)
                payload[i] = (char)('a' + i % 26);

        /* Outside the clock: the producer id. init_transactions waits for
         * it; without transactions librdkafka acquires it by itself, on a
         * timer that can fire 0.5 s after the connection is up, so one
         * warm-up record (not counted; the topic gets COUNT + 1) is
         * produced and flushed first. */
        if (per_txn == 0) {
                produce_one(rk, rkt, partition < 0 ? 0 : (int32_t)partition,
                            payload, (size_t)size);
                rd_kafka_resp_err_t err = rd_kafka_flush(rk, (int)timeout_ms);
                if (err || n_failed || n_delivered != 1)
                        fail("warm-up record: %s",
                             n_failed ? first_failure : rd_kafka_err2str(err));
                n_delivered = 0;
        } else {
                rd_kafka_error_t *e =
                    rd_kafka_init_transactions(rk, (int)timeout_ms);
                if (e)
                        txn_failed(rk, "init_transactions", e);
        }


        long long sent = 0, txns = 0;
        int32_t next_part = 0;
        double t0 = now_s();
        while (sent < count) {
                long long n = per_txn > 0 ? per_txn : count;
                if (n > count - sent)
                        n = count - sent;
                double t_phase = now_s();
                if (per_txn > 0) {
                        rd_kafka_error_t *e = rd_kafka_begin_transaction(rk);
                        if (e)
                                txn_failed(rk, "begin_transaction", e);
                }
                double t_begun = now_s();
                in_begin += t_begun - t_phase;
                for (long long i = 0; i < n; i++) {
                        int32_t part = (int32_t)partition;
                        if (partition < 0) {
                                part      = next_part;
                                next_part = (next_part + 1) % nparts;
                        }
                        produce_one(rk, rkt, part, payload, (size_t)size);
                        if ((i & 1023) == 1023)
                                rd_kafka_poll(rk, 0);
                        if (fatal_seen || interrupted)
                                fail("stopped after %lld records (%s)",
                                     sent + i,
                                     fatal_seen ? "fatal error"
                                                : "interrupted");
                }
                sent += n;
                t_phase = now_s();
                in_produce += t_phase - t_begun;
                if (per_txn > 0) {
                        rd_kafka_error_t *e =
                            rd_kafka_commit_transaction(rk, (int)timeout_ms);
                        if (e)
                                txn_failed(rk, "commit_transaction", e);
                        txns++;
                        in_end += now_s() - t_phase;
                        if (n_failed)
                                fail("%s (%lld records failed) in a "
                                     "committed transaction",
                                     first_failure, n_failed);
                }
        }
        if (per_txn == 0) {
                double t_flush          = now_s();
                rd_kafka_resp_err_t err = rd_kafka_flush(rk, (int)timeout_ms);
                if (err)
                        fail("flush: %s (%d records not acknowledged)",
                             rd_kafka_err2str(err), rd_kafka_outq_len(rk));
                in_end += now_s() - t_flush;
        }
        double secs = now_s() - t0;
        if (verbose)
                fprintf(stderr,
                        "txn-bench: phases: begin_transaction=%.3f s "
                        "produce_calls=%.3f s %s=%.3f s\n",
                        in_begin, in_produce,
                        per_txn > 0 ? "commit_transaction" : "flush", in_end);

        if (n_failed)
                fail("%s (%lld records failed)", first_failure, n_failed);
        if (fatal_seen)
                fail("fatal producer error (see above)");
        if (n_delivered != count)
                fail("%lld of %lld records acknowledged", n_delivered, count);

        long long bytes = count * size;
        if (secs <= 0)
                secs = 1e-9;
        printf("records=%lld bytes=%lld seconds=%.3f records_per_s=%.0f "
               "mb_per_s=%.2f txns=%lld\n",
               count, bytes, secs, (double)count / secs,
               (double)bytes / secs / 1e6, txns);
        fflush(stdout);

        rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
        free(payload);
        return 0;
}
