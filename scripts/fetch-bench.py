#!/usr/bin/env python3
"""Reads one partition from offset 0 to its high watermark with bare Fetch v4 requests.

A consumer that decodes nothing but batch headers (to find the next offset), so that what it
measures is the broker and the socket, not a client's record parsing. Standard library only.
Prints one line: `fetch_bench records_bytes=N seconds=S mbs=X requests=R` (MB = 10^6 B).

Usage: fetch-bench.py HOST:PORT TOPIC [--partition-max-bytes N] [--partition P]
"""

import argparse
import socket
import struct
import sys
import time

FETCH_KEY, FETCH_VERSION = 1, 4


def fetch_request(correlation_id, topic, partition, offset, partition_max_bytes):
    client = b"fetch-bench"
    name = topic.encode()
    body = struct.pack(">hhih", FETCH_KEY, FETCH_VERSION, correlation_id, len(client)) + client
    # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level (read_uncommitted)
    body += struct.pack(">iiiib", -1, 500, 1, 64 << 20, 0)
    body += struct.pack(">ih", 1, len(name)) + name
    body += struct.pack(">iiqi", 1, partition, offset, partition_max_bytes)
    return struct.pack(">i", len(body)) + body


def read_exact(sock, view):
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("the broker closed the connection")
        got += n


def parse(frame, correlation_id):
    """(error_code, high_watermark, records memoryview) of the one partition."""
    pos = 0
    (cid,) = struct.unpack_from(">i", frame, pos)
    if cid != correlation_id:
        raise ValueError(f"correlation id {cid}, expected {correlation_id}")
    pos += 4 + 4  # throttle_time_ms
    (topics,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    if topics != 1:
        raise ValueError(f"{topics} topics in the response")
    (name_len,) = struct.unpack_from(">h", frame, pos)
    pos += 2 + name_len
    (partitions,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    if partitions != 1:
        raise ValueError(f"{partitions} partitions in the response")
    _, error, high_watermark, _ = struct.unpack_from(">ihqq", frame, pos)
    pos += 4 + 2 + 8 + 8
    (aborted,) = struct.unpack_from(">i", frame, pos)
    pos += 4 + max(aborted, 0) * 16
    (records_len,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    return error, high_watermark, frame[pos:pos + max(records_len, 0)]


def next_offset(records, offset):
    """The offset after the last whole batch of `records` (batch headers only)."""
    pos = 0
    while pos + 61 <= len(records):
        base, length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + length > len(records):
            break
        (last_delta,) = struct.unpack_from(">i", records, pos + 23)
        offset = base + last_delta + 1
        pos += 12 + length
    return offset


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--partition-max-bytes", type=int, default=1 << 20)
    args = parser.parse_args()
    host, port = args.bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray(72 << 20)
    offset, total, requests, high_watermark = 0, 0, 0, None
    size_view = memoryview(bytearray(4))
    started = time.monotonic()
    while high_watermark is None or offset < high_watermark:
        requests += 1
        sock.sendall(fetch_request(requests, args.topic, args.partition, offset,
                                   args.partition_max_bytes))
        read_exact(sock, size_view)
        (size,) = struct.unpack(">i", size_view)
        if size > len(buf):
            raise ValueError(f"a {size}-byte response is larger than the buffer")
        frame = memoryview(buf)[:size]
        read_exact(sock, frame)
        error, high_watermark, records = parse(frame, requests)
        if error:
            raise ValueError(f"fetch error {error} at offset {offset}")
        after = next_offset(records, offset)
        if after == offset and offset < high_watermark:
            raise ValueError(f"no whole batch at offset {offset} ({len(records)} bytes)")
        offset = after
        total += len(records)
    seconds = time.monotonic() - started
    print(f"fetch_bench records_bytes={total} seconds={seconds:.3f} "
          f"mbs={total / seconds / 1e6:.2f} requests={requests}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
