#!/usr/bin/env python3
"""Generate golden Kafka record batches with kafka-python's own builders.

Every case is written as <case>.bin (the exact bytes returned by the builder's
build(), or several of them concatenated) and described in manifest.json, so a
test in another implementation can rebuild the batch from the same inputs and
compare.  The script is deterministic (no randomness, no wall clock; see
GZIP_MTIME) and reads every file back with kafka-python's MemoryRecords to
check it against the manifest before finishing.

Usage:  python3 generate.py        (writes next to this file)
"""

import gzip
import json
import os
import struct
import types

import kafka
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

OUT_DIR = os.path.dirname(os.path.abspath(__file__))

# kafka.codec.gzip_encode uses gzip.GzipFile without an mtime, so Python
# stamps the gzip header with time.time().  We pin the clock that the gzip
# module sees, so that the gzip header's MTIME field is always this value and
# the output is reproducible.  Nothing else in kafka-python reads the clock
# here (every append() gets an explicit timestamp).
GZIP_MTIME = 1700000000
gzip.time = types.SimpleNamespace(time=lambda: GZIP_MTIME)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BATCH_SIZE = 1 << 30  # never let a builder refuse an append
T0 = 1700000000000    # base timestamp (ms)


def big_value(size):
    """Deterministic, compressible but non-trivial text (LCG-chosen words)."""
    words = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot",
             b"golf", b"hotel", b"india", b"juliett", b"kilo", b"lima"]
    state, out, line = 12345, bytearray(), 0
    while len(out) < size:
        parts = [b"line %06d:" % line]
        for _ in range(6):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            parts.append(words[state % len(words)])
        out += b" ".join(parts) + b" %d\n" % state
        line += 1
    return bytes(out[:size])


def rec(offset, timestamp, key, value, headers=()):
    return {"offset": offset, "timestamp": timestamp, "key": key,
            "value": value, "headers": list(headers)}


def mixed_records(first_offset=0, large=None):
    """A v2 record mix: nulls, empties, headers, a non-monotonic timestamp."""
    o = first_offset
    rs = [
        rec(o + 0, T0 + 0, b"key-0", b"value-0"),
        rec(o + 1, T0 + 10, None, b"value with null key"),
        rec(o + 2, T0 + 20, b"tombstone-key", None),
        rec(o + 3, T0 + 30, b"", b""),
        rec(o + 4, T0 + 40, None, None),
        rec(o + 5, T0 + 50, b"k5", b"v5", [("h1", b"v1")]),
        rec(o + 6, T0 + 60, b"k6", b"v6",
            [("h1", b"one"), ("h2", None), ("h3", b""), ("h1", b"dup key")]),
        # non-monotonic: earlier than the batch's first timestamp
        rec(o + 7, T0 - 5000, b"k7", b"timestamp goes backwards"),
        rec(o + 8, T0 + 80, b"k8", b"\x00\x01\x02\xff binary \xfe",
            [("trace-\u00efd", b"\xca\xfe"), ("", b"empty header key")]),
        rec(o + 9, T0 + 90, b"k9", b"value-9"),
    ]
    if large is not None:
        rs.append(rec(o + 10, T0 + 100, b"large", big_value(large)))
        rs.append(rec(o + 11, T0 + 110, b"after-large", b"small again"))
    return rs


def simple_records(n, first_offset=0, ts0=T0, prefix="r"):
    return [rec(first_offset + i, ts0 + 7 * i, b"%s-key-%d" % (prefix.encode(), i),
                b"%s-value-%d " % (prefix.encode(), i) * 4) for i in range(n)]


def legacy_records(large=None):
    rs = [
        rec(0, T0 + 0, b"key-0", b"value-0"),
        rec(1, T0 + 10, None, b"value with null key"),
        rec(2, T0 + 20, b"tombstone-key", None),
        rec(3, T0 + 30, b"", b""),
        rec(4, T0 - 5000, b"k4", b"timestamp goes backwards"),
        rec(5, T0 + 50, b"k5", b"value-5 value-5 value-5 value-5"),
    ]
    if large is not None:
        rs.append(rec(6, T0 + 60, b"large", big_value(large)))
    return rs


def relative(rs):
    """Same records with offsets 0..n-1 (what a producer appends)."""
    return [dict(r, offset=i) for i, r in enumerate(rs)]


def shifted(rs, delta):
    return [dict(r, offset=r["offset"] + delta) for r in rs]


# ---------------------------------------------------------------- building

def build_v2(case):
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=CODECS[case["compression"]],
        is_transactional=case["is_transactional"],
        producer_id=case["producer_id"], producer_epoch=case["producer_epoch"],
        base_sequence=case["base_sequence"], batch_size=BATCH_SIZE)
    for r in case["records"]:
        meta = b.append(r["offset"], r["timestamp"], r["key"], r["value"],
                        r["headers"])
        assert meta is not None
    return bytes(b.build())


def build_legacy(case):
    b = LegacyRecordBatchBuilder(
        magic=case["magic"], compression_type=CODECS[case["compression"]],
        batch_size=BATCH_SIZE)
    for r in case["records"]:
        meta = b.append(r["offset"], r["timestamp"], r["key"], r["value"])
        assert meta is not None
    return bytes(b.build())


def build(case):
    data = build_v2(case) if case["magic"] == 2 else build_legacy(case)
    if "patched_base_offset" in case:
        # What a broker does on append: overwrite the first 8 bytes (v2
        # BaseOffset / legacy wrapper offset).  Not covered by any CRC.
        data = struct.pack(">q", case["patched_base_offset"]) + data[8:]
    return data


def v2_case(name, compression, records, pid=-1, epoch=-1, seq=-1, txn=False):
    return {"file": name, "magic": 2, "compression": compression,
            "is_transactional": txn, "producer_id": pid,
            "producer_epoch": epoch, "base_sequence": seq,
            "records": records}


def legacy_case(name, magic, compression, records):
    return {"file": name, "magic": magic, "compression": compression,
            "is_transactional": False, "producer_id": -1,
            "producer_epoch": -1, "base_sequence": -1, "records": records}


def cases():
    out = []
    # v2: every codec, same mixed records.  none/snappy/lz4 also carry a
    # 66 KiB value, so that the payload exceeds both snappy's 32 KiB xerial
    # blocks and LZ4's 64 KiB frame blocks (kept out of gzip/zstd only to keep
    # manifest.json small).
    for c in CODECS:
        large = 66 * 1024 if c in ("none", "snappy", "lz4") else None
        out.append(v2_case("v2_%s_basic.bin" % c, c,
                           mixed_records(large=large)))
    out.append(v2_case("v2_none_single_record.bin", "none",
                       [rec(0, T0, None, b"v")]))
    out.append(v2_case("v2_none_idempotent.bin", "none", mixed_records(),
                       pid=12345, epoch=3, seq=42))
    out.append(v2_case("v2_zstd_idempotent.bin", "zstd", mixed_records(),
                       pid=12345, epoch=3, seq=42))
    out.append(v2_case("v2_none_transactional.bin", "none",
                       simple_records(5, prefix="txn"),
                       pid=4242, epoch=7, seq=0, txn=True))
    # kafka-python always writes BaseOffset 0 and uses the appended offset
    # as the offset delta: offsets 1000..1009 => deltas 1000..1009.
    out.append(v2_case("v2_none_offset_deltas_1000.bin", "none",
                       simple_records(10, first_offset=1000, prefix="od")))
    # Producer-style deltas 0..9, BaseOffset then set to 1000 (broker-style).
    c = v2_case("v2_none_base_offset_1000.bin", "none",
                simple_records(10, prefix="bo"))
    c["patched_base_offset"] = 1000
    out.append(c)
    out.append(v2_case("v2_none_sequence_wrap.bin", "none",
                       simple_records(3, prefix="wrap"),
                       pid=12345, epoch=3, seq=2147483646))

    # magic 1 and magic 0
    for magic in (1, 0):
        out.append(legacy_case("v%d_none.bin" % magic, magic, "none",
                               legacy_records()))
        for c in ("gzip", "snappy", "lz4"):
            # inner offsets 0..n-1; the wrapper's own offset is what the
            # builder writes (0).  snappy: a 33 KiB value => 2 xerial blocks.
            large = 33 * 1024 if c == "snappy" else None
            out.append(legacy_case("v%d_%s.bin" % (magic, c), magic, c,
                                   legacy_records(large=large)))

    # Segment-like: several v2 batches, contiguous offsets.  Each batch is
    # built as a producer would (deltas 0..n-1) and given its BaseOffset.
    batches, next_off = [], 0
    for i, (c, n) in enumerate([("none", 4), ("gzip", 5), ("snappy", 3),
                                ("lz4", 4), ("zstd", 6), ("none", 1)]):
        rs = simple_records(n, ts0=T0 + 1000 * i, prefix="mb%d" % i)
        if i == 2:
            rs[1]["headers"] = [("h", b"x"), ("n", None)]
        b = v2_case(None, c, rs)
        del b["file"]
        b["patched_base_offset"] = next_off
        batches.append(b)
        next_off += n
    out.append({"file": "v2_multi_batch.bin", "batches": batches})

    # Legacy segment-like: v0 and v1 messages, contiguous offsets.
    # v0 compressed: inner offsets are absolute, wrapper offset = last inner.
    # v1 compressed: inner offsets relative 0..n-1, wrapper offset = last
    # absolute offset (as a 0.10 broker writes it).
    lb = []
    lb.append(legacy_case(None, 0, "none", simple_records(3, 0, prefix="l0")))
    g = legacy_case(None, 0, "gzip", simple_records(3, 3, prefix="l0z"))
    g["patched_base_offset"] = 5
    lb.append(g)
    lb.append(legacy_case(None, 1, "none", simple_records(3, 6, prefix="l1")))
    for base, c in ((9, "lz4"), (12, "snappy")):
        w = legacy_case(None, 1, c, simple_records(3, 0, prefix="l1" + c))
        w["patched_base_offset"] = base + 2
        lb.append(w)
    for b in lb:
        del b["file"]
    out.append({"file": "legacy_mixed.bin", "batches": lb})
    return out


# ---------------------------------------------------------------- manifest

def hexo(b):
    return None if b is None else b.hex()


def to_json(case):
    j = {k: v for k, v in case.items() if k not in ("records", "batches")}
    if "batches" in case:
        j["batches"] = [to_json(b) for b in case["batches"]]
    else:
        j["records"] = [{"offset": r["offset"], "timestamp": r["timestamp"],
                         "key": hexo(r["key"]), "value": hexo(r["value"]),
                         "headers": [[k, hexo(v)] for k, v in r["headers"]]}
                        for r in case["records"]]
    return j


# ---------------------------------------------------------------- checking

def expected_offsets(case):
    rs = case["records"]
    patched = case.get("patched_base_offset")
    if case["magic"] == 2:
        return [(patched or 0) + r["offset"] for r in rs]
    if case["compression"] == "none" or case["magic"] == 0:
        return [r["offset"] for r in rs]
    # magic 1 wrapper: absolute = wrapper_offset - last_inner + inner; the
    # reader keeps the inner offsets if that base would be negative (as it
    # is for the builder's own wrapper offset 0).
    base = (patched or 0) - rs[-1]["offset"]
    return [(base if base >= 0 else 0) + r["offset"] for r in rs]


def check(data, case_list):
    """Read data back with kafka-python and compare with the cases."""
    mr = MemoryRecords(data)
    batches = []
    while mr.has_next():
        batches.append(mr.next_batch())
    # An uncompressed legacy message set is one "batch" per message.
    want = []
    for case in case_list:
        if case["magic"] < 2 and case["compression"] == "none":
            want += [dict(case, records=[r]) for r in case["records"]]
        else:
            want.append(case)
    assert len(batches) == len(want), (len(batches), len(want))
    for batch, case in zip(batches, want):
        assert batch.magic == case["magic"]
        assert batch.validate_crc()
        assert batch.compression_type == CODECS[case["compression"]], \
            "builder fell back to another codec"
        if case["magic"] == 2:
            assert batch.producer_id == case["producer_id"]
            assert batch.producer_epoch == case["producer_epoch"]
            assert batch.base_sequence == case["base_sequence"]
            assert batch.is_transactional == case["is_transactional"]
        got = list(batch)
        assert len(got) == len(case["records"])
        for g, r, off in zip(got, case["records"], expected_offsets(case)):
            assert g.offset == off, (g.offset, off)
            assert g.key == r["key"] and g.value == r["value"]
            assert g.validate_crc()
            if case["magic"] == 0:
                assert g.timestamp is None
            else:
                assert g.timestamp == r["timestamp"]
            assert [tuple(h) for h in g.headers] == \
                [tuple(h) for h in r["headers"]]


def main():
    manifest = {"generator": "kafka-python %s" % kafka.__version__,
                "cases": []}
    for case in cases():
        parts = case.get("batches", [case])
        data = b"".join(build(p) for p in parts)
        check(data, parts)
        with open(os.path.join(OUT_DIR, case["file"]), "wb") as f:
            f.write(data)
        manifest["cases"].append(to_json(case))
        print("%-34s %7d bytes" % (case["file"], len(data)))
    with open(os.path.join(OUT_DIR, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("ok: %d cases verified by read-back" % len(manifest["cases"]))


if __name__ == "__main__":
    main()
