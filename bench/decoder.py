"""Record decoder and encoder throughput: segmentlog's kernels vs kafka-python, one core.

The same bytes go to both sides: `records` records (8-byte keys, `value_bytes`-byte JSON-ish
values that compress like real payloads) in v2 batches of at most 16 KiB, a Java producer's
default batch.size, laid end to end like a segment, once per codec.

* decode, segmentlog: split into entries (batch.iter_headers), decoded per 1 MiB of entries
  (the storage layer's read chunk) by ColumnarDecoder, turned into Arrow arrays (arrow.to_arrow).
* decode, kafka-python: kafka.record.MemoryRecords over the whole buffer, every batch's records
  iterated, key/value/offset/timestamp touched.
* decompress only: the codec library alone (cramjam) over the same compressed record areas:
  the floor any decoder of that codec pays.
* encode: pyarrow arrays -> batches of <= 16 KiB (arrow.columns_from_arrow +
  records.encode_batches) vs kafka-python's DefaultRecordBatchBuilder appending the same rows.

Target (in run()'s table rows): every codec c decodes within bare decompression plus 1.1x the
uncompressed decode, segmentlog_c / (decompress_only_c + 1.1 x segmentlog_none) <= 1, the three
timed back to back in each repetition (`budget_ratio`) and the median of the ratios taken.

Numba compiles on first use, so everything runs once before it is timed. Rates are records/s
from the median of `repetitions` runs, the two contenders timed alternately, each run repeating
the work for ~0.25 s (see `paired`); the ratio of the best runs is printed too.
"""

from __future__ import annotations

from contextlib import contextmanager
import os
import random
import statistics
import struct
import sys
import time

import cramjam
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
import numpy as np
import pyarrow as pa

from segmentlog_source.format.arrow import columns_from_arrow, to_arrow
from segmentlog_source.format.batch import CODEC_NAMES, V2_HEADER_SIZE, iter_headers
from segmentlog_source.format.record_decoder import ColumnarDecoder
from segmentlog_source.format.record_encoder import encode_batches

BATCH_BYTES = 16 * 1024
CHUNK_BYTES = 1024 * 1024
BASE_TIMESTAMP = 1700000000000
BUDGET_FACTOR = 1.1      # of the uncompressed decode, on top of bare decompression


def make_rows(records: int, value_bytes: int, seed: int = 7):
    """(keys, values, timestamps) as Python lists: the rows every contender encodes."""
    rng = random.Random(seed)
    users = [f"user-{rng.randrange(10**6):06d}" for _ in range(500)]
    keys, values = [], []
    for i in range(records):
        keys.append(b"k%07d" % i)
        text = (f'{{"id":{i},"user":"{rng.choice(users)}","amount":{rng.random() * 1000:.2f},'
                f'"ok":{str(rng.random() < 0.9).lower()},"note":"').encode()
        pad = bytes(rng.choice(b"abcdefgh ") for _ in range(max(0, value_bytes - len(text) - 2)))
        values.append((text + pad + b'"}')[:value_bytes])
    stamps = [BASE_TIMESTAMP + i // 10 for i in range(records)]
    return keys, values, stamps


def arrow_rows(keys, values, stamps):
    return (pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
            pa.array(np.asarray(stamps, np.int64) * 1000, pa.timestamp("us", tz="UTC")))


def encode_segmentlog(key, value, timestamp, codec: int) -> bytes:
    columns = columns_from_arrow(key=key, value=value, timestamp=timestamp)
    return encode_batches(columns, max_bytes=BATCH_BYTES, codec=codec).data


def encode_kafka_python(keys, values, stamps, codec: int) -> list:
    batches, builder, first = [], None, 0
    for i, (k, v, t) in enumerate(zip(keys, values, stamps)):
        if builder is None or builder.append(i - first, t, k, v, []) is None:
            if builder is not None:
                batches.append(builder.build())
            builder, first = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1,
                                                       BATCH_BYTES), i
            builder.append(0, t, k, v, [])
    batches.append(builder.build())
    return batches


def decode_segmentlog(data: bytes, decoder: ColumnarDecoder) -> int:
    view = memoryview(data)
    rows, chunk, chunk_end = 0, [], CHUNK_BYTES
    for header in iter_headers(data):
        if header.position >= chunk_end and chunk:
            rows += len(to_arrow(decoder.decode(chunk))["offset"])
            chunk, chunk_end = [], header.position + CHUNK_BYTES
        chunk.append((header, view[header.position:header.end]))
    if chunk:
        rows += len(to_arrow(decoder.decode(chunk))["offset"])
    return rows


def decode_kafka_python(data: bytes) -> int:
    rows, records = 0, MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        for record in batch:
            record.key, record.value, record.offset, record.timestamp
            rows += 1
    return rows


def _unxerial(area) -> bytes:
    out, pos = [], 16  # magic + version + compatible version
    while pos < len(area):
        (size,) = struct.unpack_from(">i", area, pos)
        out.append(bytes(cramjam.snappy.decompress_raw(area[pos + 4:pos + 4 + size])))
        pos += 4 + size
    return b"".join(out)


DECOMPRESS = {1: lambda a: cramjam.gzip.decompress(a), 2: _unxerial,
              3: lambda a: cramjam.lz4.decompress(a), 4: lambda a: cramjam.zstd.decompress(a)}


def decompress_only(data: bytes, codec: int) -> int:
    view, total = memoryview(data), 0
    for header in iter_headers(data):
        total += len(DECOMPRESS[codec](view[header.position + V2_HEADER_SIZE:header.end]))
    return total


def timed(fn, times: int = 1) -> float:
    """Seconds per call of fn, over `times` calls in a row."""
    start = time.perf_counter()
    for _ in range(times):
        fn()
    return (time.perf_counter() - start) / times


def paired(ours, theirs, repetitions: int, window: float = 0.25) -> dict:
    """Median (and best) seconds per call of both, measured alternately, each repetition
    repeating a call until it spans about `window` seconds: on a shared machine a busy
    neighbour then slows both sides alike, instead of weighing most on whichever side is
    fast enough to fit between two of its time slices."""
    loops = [max(1, round(window / timed(fn))) for fn in (ours, theirs)]  # also warms up
    a, b = [], []
    for _ in range(repetitions):
        a.append(timed(ours, loops[0]))
        b.append(timed(theirs, loops[1]))
    return {"segmentlog_s": statistics.median(a), "kafka_python_s": statistics.median(b),
            "segmentlog_best_s": min(a), "kafka_python_best_s": min(b)}


def median_seconds(fn, repetitions: int, window: float = 0.25) -> float:
    loops = max(1, round(window / timed(fn)))
    return statistics.median(timed(fn, loops) for _ in range(repetitions))


def budget_ratio(compressed, decompress, uncompressed, repetitions: int,
                 window: float = 0.25) -> dict:
    """Median over repetitions of compressed / (decompress + 1.1 x uncompressed), the three
    timed back to back in each repetition (as `paired`), so a busy spell weighs on all terms."""
    fns = (compressed, decompress, uncompressed)
    loops = [max(1, round(window / timed(fn))) for fn in fns]
    runs = []
    for _ in range(repetitions):
        c, d, u = (timed(fn, n) for fn, n in zip(fns, loops))
        runs.append(c / (d + BUDGET_FACTOR * u))
    return {"budget_ratio": statistics.median(runs), "budget_runs": runs}


def rates(times: dict, records: int) -> dict:
    return {**times, "segmentlog_rps": records / times["segmentlog_s"],
            "kafka_python_rps": records / times["kafka_python_s"],
            "ratio": times["kafka_python_s"] / times["segmentlog_s"],
            "best_ratio": times["kafka_python_best_s"] / times["segmentlog_best_s"]}


@contextmanager
def one_core():
    """Pin the process to one CPU for the measurement (Linux), so 'single core' is literal."""
    if not hasattr(os, "sched_setaffinity"):
        yield None
        return
    before = os.sched_getaffinity(0)
    cpu = max(before)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, before)


def run(repetitions: int = 5, records: int = 200_000, value_bytes: int = 100,
        codecs=tuple(range(len(CODEC_NAMES)))) -> dict:
    keys, values, stamps = make_rows(records, value_bytes)
    key, value, timestamp = arrow_rows(keys, values, stamps)
    decoder = ColumnarDecoder()
    result = {"records": records, "value_bytes": value_bytes, "batch_bytes": BATCH_BYTES,
              "chunk_bytes": CHUNK_BYTES, "repetitions": repetitions, "decode": {},
              "encode": {}}
    plain = None    # the uncompressed bytes: the budget's third term
    with one_core() as cpu:
        result["cpu"] = cpu
        for codec in codecs:
            name = CODEC_NAMES[codec]
            data = bytes(encode_segmentlog(key, value, timestamp, codec))
            assert decode_segmentlog(data, decoder) == decode_kafka_python(data) == records
            row = rates(paired(lambda: decode_segmentlog(data, decoder),
                               lambda: decode_kafka_python(data), repetitions), records)
            row.update(bytes=len(data), batches=sum(1 for _ in iter_headers(data)))
            if not codec:
                plain = data
            else:
                row["decompress_only_s"] = median_seconds(lambda: decompress_only(data, codec),
                                                          repetitions)
                if plain is not None:
                    row.update(budget_ratio(lambda: decode_segmentlog(data, decoder),
                                            lambda: decompress_only(data, codec),
                                            lambda: decode_segmentlog(plain, decoder),
                                            repetitions))
            result["decode"][name] = row
            result["encode"][name] = rates(paired(
                lambda: encode_segmentlog(key, value, timestamp, codec),
                lambda: encode_kafka_python(keys, values, stamps, codec), repetitions), records)
    result["cases"] = table_rows(result)
    return result


def table_rows(result: dict) -> list[dict]:
    """The `make bench` rows (bench/common.py's case) of a run()'s result: per codec, decode and
    encode against kafka-python, and each compressed decode against its budget."""
    from .common import case

    data = (f"{result['records']:,} records, {result['value_bytes']} B values, batches <= "
            f"{result['batch_bytes'] // 1024} KiB, one core")
    rows = []
    uncompressed = result["decode"].get("none", {}).get("segmentlog_s")
    for kind in ("decode", "encode"):
        for name, r in result[kind].items():
            raw = {"segmentlog": [r["segmentlog_s"]], "kafka_python": [r["kafka_python_s"]]}
            ratios = {"segmentlog / kafka_python": r["segmentlog_s"] / r["kafka_python_s"]}
            targets = []
            if "decompress_only_s" in r:
                raw["decompress_only"] = [r["decompress_only_s"]]
                ratios["segmentlog / decompress_only"] = r["segmentlog_s"] / r["decompress_only_s"]
                budget = "segmentlog / (decompress_only + 1.1 x none)"
                if "budget_ratio" in r:
                    ratios[budget] = r["budget_ratio"]
                elif uncompressed:   # (medians timed apart: only when none was not re-timed)
                    ratios[budget] = r["segmentlog_s"] / (r["decompress_only_s"]
                                                          + BUDGET_FACTOR * uncompressed)
                if budget in ratios:
                    targets.append((budget, 1.0))
            rows.append(case(f"decoder: {kind} {name}", data=data,
                             repetitions=result["repetitions"], raw=raw, ratios=ratios,
                             targets=targets, notes="medians as reported by bench/decoder.py"))
    return rows


def print_table(result: dict, out=sys.stdout) -> None:
    print(f"{result['records']} records, {result['value_bytes']}-byte values, batches <= "
          f"{result['batch_bytes'] // 1024} KiB, median of {result['repetitions']}, "
          f"pinned to CPU {result['cpu']}", file=out)
    print(f"{'decode':8} {'batches':>7} {'MB':>6} {'segmentlog rec/s':>17} "
          f"{'kafka-python rec/s':>19} {'ratio':>6} {'(best)':>6} {'ms':>6} "
          f"{'decompress-only ms':>18}", file=out)
    for name, r in result["decode"].items():
        only = f"{r['decompress_only_s'] * 1e3:18.1f}" if "decompress_only_s" in r else f"{'-':>18}"
        print(f"{name:8} {r['batches']:7d} {r['bytes'] / 1e6:6.1f} {r['segmentlog_rps']:17,.0f} "
              f"{r['kafka_python_rps']:19,.0f} {r['ratio']:6.1f} {r['best_ratio']:6.1f} "
              f"{r['segmentlog_s'] * 1e3:6.1f} {only}", file=out)
    print(f"{'encode':8} {'':>7} {'':>6} {'segmentlog rec/s':>17} {'kafka-python rec/s':>19} "
          f"{'ratio':>6} {'(best)':>6} {'ms':>6}", file=out)
    for name, r in result["encode"].items():
        print(f"{name:8} {'':>7} {'':>6} {r['segmentlog_rps']:17,.0f} "
              f"{r['kafka_python_rps']:19,.0f} {r['ratio']:6.1f} {r['best_ratio']:6.1f} "
              f"{r['segmentlog_s'] * 1e3:6.1f}", file=out)


if __name__ == "__main__":
    print_table(run(repetitions=int(sys.argv[1]) if len(sys.argv) > 1 else 5))
