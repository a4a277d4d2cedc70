"""Compaction (issue #20): the log cleaner's throughput on a 1 GB compacted topic, in one process
and as a Spark job, and its peak memory, against plain reads of the same bytes.

Data: 6,600,000 records (1 topic x 4 partitions, lz4, 7-byte keys = 1,000,000 distinct keys, so
a key is written ~6.6 times and compaction drops most records; 300-byte text values; 16 MiB
segments, so all but each partition's active segment is cleanable), 1 GB of .log, generated
once into bench/data. Every cleaning runs on a fresh copy of it (`cp -r`, then synced, outside
the timing).

Side by side, taking turns, REPETITIONS times (each number a median):
* cleaner, one process: LogManager(copy, overrides={"cleanup.policy": "compact"}).compact() in a
  child process (`python -m bench.compaction compact DIR BUFFER[@PARTITION]`) with the default
  dedupe buffer (128 MiB, as log.cleaner.dedupe.buffer.size). The child times each partition
  (imports and the numba kernels' loading done before) and reports its CPU time and its own
  peak RSS (VmHWM).
* the same on partition 0 alone with a SMALL_BUFFER one, which holds fewer keys than the
  partition has, so the cleaning takes several passes; against the default run's partition 0.
* Spark job: segmentlog_source.compact(spark, copy, configs=...) on local[2], one task per
  partition, timed around the call (after a warm-up job on a small log of the same kind).
* references, over the same bytes: `cp -r` of the directory; a child reading every batch with
  PartitionLog.iter_entries(verify_crc=True); one reading and decoding every batch
  (ColumnarDecoder, batch by batch, as the cleaner decodes them). A baseline child does the
  imports and the kernels' loading only (the interpreter and library floor of the peak RSS).
MB/s: input .log bytes / wall seconds; ratios are of seconds ("time x / y": x takes that many
times y's time). Target on memory: the cleaner's peak above the baseline within the dedupe
buffer it was given (the bound spark/log_upkeep.py describes; Kafka's map is that buffer).

    python -m bench.compaction             # the cases, as JSON (bench/run.py: `compaction`)
    python -m bench.compaction profile 25  # cProfile of one one-process cleaning: the top 25
"""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path
import shutil
import statistics
import subprocess
import sys
import time

from .common import (DATA, MB, REPO, case, dataset, describe, log_bytes, ratio,
                     spark_session)
from .memory import peak_rss_mb

BASE = dict(topics=["state"], partitions=4, codec="lz4", key_size=7, value_size=300,
            records_per_batch=100, segment_bytes=16 * 1024**2, timestamp_step_ms=1,
            start_timestamp=1_700_000_000_000, seed=20, records=6_600_000)
WARMUP = {**BASE, "records": 40_000}          # the Spark warm-up job's log
DEFAULT_BUFFER = 128 * 1024**2                 # offset_map.DEFAULT_DEDUPE_BUFFER_BYTES
SMALL_BUFFER = 4 * 1024**2
WORKING_SET = 64 * 1024**2                    # one batch in flight: read, decoded, rewritten
REPETITIONS = 3
OVERRIDES = {"cleanup.policy": "compact"}
WORK = DATA / "compaction-work"


# -- the children ----------------------------------------------------------------------------

def _load_kernels(path: str) -> None:
    """Decode the log's first batch and encode it again: numba's cached kernels and the codec
    loaded, so that neither counts in a timing (and both count in the baseline)."""
    import numpy as np

    from segmentlog_source.format.batch_filter import filter_batch
    from segmentlog_source.format.record_decoder import ColumnarDecoder
    from segmentlog_source.storage.log.log_directory import find_partitions
    from segmentlog_source.storage.log.partition_log import PartitionLog

    part = find_partitions(path)[0]
    _, header, entry = next(iter(PartitionLog.open(part.path).iter_entries(verify_crc=True)))
    columns = ColumnarDecoder().decode([(header, entry)])
    keep = np.ones(columns.num_rows, bool)
    keep[0] = False
    filter_batch(header, entry, columns, keep)


def compact(path: str, spec: str, baseline: bool) -> dict:
    """LogManager(path).compact() with the dedupe buffer `spec` ("BYTES"), or only one of its
    partitions ("BYTES@PARTITION"); each partition timed on its own."""
    from segmentlog_source.storage.log.log_manager import LogManager

    _load_kernels(path)
    if baseline:
        return {}
    buffer_bytes, _, only = spec.partition("@")
    manager = LogManager(path, overrides=OVERRIDES, dedupe_buffer_bytes=int(buffer_bytes))
    done, seconds = [], []
    cpu = _cpu_seconds()
    for part in manager.partitions():     # what compact() does, with a clock per partition
        if only and part.partition != int(only):
            continue
        start = time.perf_counter()
        done.append(manager.compact_partition(part))
        seconds.append(time.perf_counter() - start)
    first = [p.passes[0] for p in done]
    return {"seconds": sum(seconds), "cpu_seconds": _cpu_seconds() - cpu,
            "partition_seconds": seconds,
            "passes": [sum(r.cleaned for r in p.passes) for p in done],
            "map_entries_first_pass": [r.map_entries for r in first],
            # the first pass's counts: with one pass, the whole cleanable range
            "records_read": sum(r.records_read for r in first),
            "records_kept": sum(r.records_kept for r in first),
            "bytes_read": sum(r.bytes_read for p in done for r in p.passes)}


def scan(path: str, decode: str, baseline: bool) -> dict:
    """Every batch of every partition, CRC-checked; decoded as well when `decode` is "1"."""
    from segmentlog_source.format.record_decoder import ColumnarDecoder
    from segmentlog_source.storage.log.log_directory import find_partitions
    from segmentlog_source.storage.log.partition_log import PartitionLog

    _load_kernels(path)
    if baseline:
        return {}
    decoder = ColumnarDecoder(verify_crc=False)     # iter_entries has checked the CRC
    start, cpu = time.perf_counter(), _cpu_seconds()
    size = records = 0
    for part in find_partitions(path):
        for _, header, entry in PartitionLog.open(part.path).iter_entries(verify_crc=True):
            size += header.size
            if decode == "1":
                records += decoder.decode([(header, entry)]).num_rows
            else:
                records += header.records_count
    return {"seconds": time.perf_counter() - start, "cpu_seconds": _cpu_seconds() - cpu,
            "bytes": size, "records": records}


def _cpu_seconds() -> float:
    """This process's CPU time: on a machine shared with other work, a single-threaded run's
    CPU time is what its wall time would be on an idle one."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


KINDS = {"compact": compact, "scan": scan}


def _child(kind: str, path: Path, arg: str, baseline: bool = False) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        str(REPO), os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "bench.compaction", kind, str(path), arg]
    cmd += ["--baseline"] if baseline else []
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


# -- the parent ------------------------------------------------------------------------------

CLEANER = "cleaner, one process"
SMALL = f"{SMALL_BUFFER // 1024**2} MiB dedupe buffer"
ONE_PASS = "128 MiB (default), 1 pass"
SPARK = "Spark job, local[2]"
CP, READ, DECODE = "cp -r", "read + CRC", "read + CRC + decode"
BASELINE = "baseline (imports, kernels)"


def _fresh_copy(source: Path) -> float:
    """`cp -r` of the source log into WORK; its seconds (the sync after it is not counted, so
    that the copy's write-back does not run under the next measurement)."""
    shutil.rmtree(WORK, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(["cp", "-r", str(source), str(WORK)], check=True)
    seconds = time.perf_counter() - start
    os.sync()
    return seconds


def _spark_compact(spark) -> tuple[float, list]:
    import segmentlog_source

    start = time.perf_counter()
    frame = segmentlog_source.compact(spark, str(WORK), configs=OVERRIDES)
    seconds = time.perf_counter() - start
    return seconds, frame.collect()


def run(repetitions: int = REPETITIONS) -> list[dict]:
    source = dataset("compaction", **BASE)
    spark = spark_session()
    _fresh_copy(dataset("compaction-warmup", **WARMUP))    # the workers start, import, load
    _spark_compact(spark)
    seconds: dict[str, list[float]] = {s: [] for s in (CLEANER, ONE_PASS, SMALL, SPARK, CP,
                                                        READ, DECODE)}
    peaks: dict[str, list[float]] = {s: [] for s in (BASELINE, CLEANER, SMALL, READ, DECODE)}
    got: dict[str, dict] = {}
    out: dict[str, list[int]] = {"all": [], "partition 0": [], SMALL: [], SPARK: []}
    cpu: dict[str, list[float]] = {s: [] for s in (CLEANER, SMALL, READ, DECODE)}

    def measure(side: str, result: dict) -> None:
        seconds[side].append(result["seconds"])
        cpu[side].append(result["cpu_seconds"])
        peaks[side].append(result["peak_mb"])
        got[side] = result

    for _ in range(repetitions):
        seconds[CP].append(_fresh_copy(source))
        measure(CLEANER, _child("compact", WORK, str(DEFAULT_BUFFER)))
        seconds[ONE_PASS].append(got[CLEANER]["partition_seconds"][0])
        out["all"].append(log_bytes(WORK))
        out["partition 0"].append(log_bytes(WORK / "state-0"))
        _fresh_copy(source)
        measure(SMALL, _child("compact", WORK, f"{SMALL_BUFFER}@0"))
        out[SMALL].append(log_bytes(WORK / "state-0"))
        _fresh_copy(source)
        took, rows = _spark_compact(spark)
        seconds[SPARK].append(took)
        out[SPARK].append(log_bytes(WORK))
        got[SPARK] = {"passes": [r["passes"] for r in rows],
                      "records_kept": sum(r["records_kept"] for r in rows)}
        for side, decode in ((READ, "0"), (DECODE, "1")):
            measure(side, _child("scan", source, decode))
        peaks[BASELINE].append(_child("compact", source, "0", baseline=True)["peak_mb"])
    shutil.rmtree(WORK, ignore_errors=True)
    return _rows(source, repetitions, seconds, peaks, got, out, cpu)


def _rows(source: Path, repetitions: int, seconds: dict, peaks: dict, got: dict,
          out: dict, cpu: dict) -> list[dict]:
    size, size0 = log_bytes(source), log_bytes(source / "state-0")
    on = {side: size0 if side in (SMALL, ONE_PASS) else size for side in seconds}
    rate = {side: [on[side] / MB / s for s in values] for side, values in seconds.items()}
    data = describe(source, BASE)
    one, small = got[CLEANER], got[SMALL]
    passes = small["passes"][0]
    written = statistics.median(out["all"])

    def same(a: str, b: str) -> str:
        return "equal to" if set(out[a]) == set(out[b]) else "**differs from**"

    def sides(*names: str, **more) -> dict:
        return dict(raw={s: rate[s] for s in names},
                    seconds={s: seconds[s] for s in names},
                    cpu_seconds={s: cpu[s] for s in names if s in cpu}, **more)

    def by_cpu(*names: str) -> str:
        return "; by CPU time (an idle machine's wall time, fsyncs aside): " + ", ".join(
            f"{s} {on[s] / MB / statistics.median(cpu[s]):,.3g} MB/s" for s in names)

    common = dict(data=data, repetitions=repetitions, unit="MB/s")
    above = {s: statistics.median(peaks[s]) - statistics.median(peaks[BASELINE])
             for s in (CLEANER, SMALL)}
    buffers = {CLEANER: DEFAULT_BUFFER, SMALL: SMALL_BUFFER}
    # The map is the buffer (24-byte slots, preallocated); the rest is one batch being read,
    # decoded and rewritten at a time: WORKING_SET bounds it whatever the log's size.
    memory_ratios = {f"(peak - baseline) / (dedupe buffer + {WORKING_SET // MB} MB) ({s})":
                     above[s] * MB / (buffers[s] + WORKING_SET) for s in (CLEANER, SMALL)}
    return [
        case("compaction: one process (LogManager.compact), 128 MiB dedupe buffer, vs reading "
             "the same bytes", **common,
             ratios={f"time cleaner / {ref}": ratio(seconds, CLEANER, ref)
                     for ref in (DECODE, READ, CP)},
             notes=f"{size / MB:,.0f} MB of .log in, {written / MB:,.0f} MB out "
                   f"({written / size:.1%}); the cleanable range (all but the active "
                   f"segments): {one['records_read']:,} records, {one['records_kept']:,} kept "
                   f"({one['records_kept'] / max(1, one['records_read']):.1%}); passes per "
                   f"partition {one['passes']}" + by_cpu(CLEANER, DECODE),
             **sides(CLEANER, DECODE, READ, CP), input_bytes=size, output_bytes=written,
             records_read=one["records_read"], records_kept=one["records_kept"]),
        case("compaction: Spark job (segmentlog_source.compact, local[2]) vs one process",
             **common, ratios={"time Spark job / one process": ratio(seconds, SPARK, CLEANER)},
             notes=f"one task per partition, 4 tasks on 2 cores; passes per partition "
                   f"{got[SPARK]['passes']}; output {same(SPARK, 'all')} the one process's",
             **sides(SPARK, CLEANER)),
        case(f"compaction: {SMALL} ({passes} passes) vs the default, on partition 0",
             data=f"partition 0 of the log above: {size0 / MB:,.0f} MB of .log",
             repetitions=repetitions, unit="MB/s",
             ratios={f"time {SMALL} / 128 MiB": ratio(seconds, SMALL, ONE_PASS)},
             notes=f"each pass maps at most {small['map_entries_first_pass'][0]:,} keys, of "
                   f"{one['map_entries_first_pass'][0]:,} in the partition; the passes read "
                   f"{small['bytes_read'] / MB:,.0f} MB in all; output "
                   f"{same(SMALL, 'partition 0')} one pass's" + by_cpu(SMALL), passes=passes,
             **sides(SMALL, ONE_PASS)),
        case("compaction: peak RSS of the one-process cleaner", data=data,
             repetitions=repetitions, unit="MB", raw=peaks, ratios=memory_ratios,
             targets=[(r, 1.0) for r in memory_ratios],
             notes=f"{CLEANER}: 128 MiB buffer, the whole log, offset map of up to "
                   f"{max(one['map_entries_first_pass']):,} keys; {SMALL}: partition 0, "
                   f"{passes} passes of {small['map_entries_first_pass'][0]:,} keys; "
                   + _per_key(above, one, small)),
    ]


def _per_key(above: dict, one: dict, small: dict) -> str:
    """What the cleaner's memory is made of: the map's slots (the buffer), the rest."""
    slots = DEFAULT_BUFFER // 24
    return (f"the map: {slots:,} slots of 24 B (Kafka's layout) = the 128 MiB buffer, "
            f"{max(one['map_entries_first_pass']):,} of them filled; the peak above the baseline "
            f"was {above[CLEANER]:,.0f} MB with it and {above[SMALL]:,.0f} MB with 4 MiB")


# -- profile ---------------------------------------------------------------------------------

def profile(top: int = 25) -> None:
    """cProfile of one cleaning of a fresh copy (default buffer), top `top` by own time."""
    import cProfile
    import pstats

    from segmentlog_source.storage.log.log_manager import LogManager

    source = dataset("compaction", **BASE)
    _fresh_copy(source)
    _load_kernels(str(WORK))
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    LogManager(str(WORK), overrides=OVERRIDES).compact()
    profiler.disable()
    print(f"{time.perf_counter() - start:.1f} s under cProfile, {log_bytes(source) / MB:,.0f} "
          "MB of .log")
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in KINDS:
        result = KINDS[sys.argv[1]](sys.argv[2], sys.argv[3], "--baseline" in sys.argv)
        print(json.dumps({**result, "peak_mb": peak_rss_mb()}))
    elif sys.argv[1:2] == ["profile"]:
        profile(*map(int, sys.argv[2:3]))
    else:
        print(json.dumps(run(), indent=1))
