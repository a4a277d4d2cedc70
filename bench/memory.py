"""Peak resident memory of a Python process that scans one big segment or writes 1 GiB.

Each measurement is a fresh child process (`python -m bench.memory <kind> ...`) reporting its
own peak RSS (VmHWM; see peak_rss_mb). The same child run with `--baseline` does every
import and set-up but not the work (the scan reads only the first batch, loading the numba
kernels; the writes build their input but write nothing): the interpreter and library floor.
* scan: spark.reader.GroupScan over one whole segment, payload decoded, batches dropped as they
  come: the first (1 GiB) segment of bench/selective.py's 2 GB log, and the 100 MB log's one.
* append: storage's PartitionLog.append into a new log: one 16 MiB block of v2 batches
  (100-byte values, 16-byte keys, 100 per batch), encoded once, appended until 1 GiB is written
  (the log assigns offsets, so every append is new records).
* writer: the Spark writer's task and commit code (spark/writer.py: SegmentLogWriter.write then
  commit, called without Spark), given 1 GiB of values as Arrow batches of 65,536 rows.
Target: peak <= 200 MB, whatever the segment size.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import shutil
import subprocess
import sys

from .common import DATA, MB, REPO, case, dataset

TARGET_MB = 200
REPETITIONS = 3
WRITE_BYTES = 1024**3
BLOCK_BYTES = 16 * 1024**2
ROWS_PER_ARROW_BATCH = 65_536


# -- the children ----------------------------------------------------------------------------

def _load_encoder():
    """Encode two records, so that numba's compiled encoder counts in the baseline."""
    import numpy as np

    from segmentlog_source.format.record_encoder import encode_batches
    from segmentlog_source.format.records import RecordColumns

    encode_batches(RecordColumns(timestamps=np.zeros(2, np.int64)))


def scan_segment(path: str, baseline: bool) -> dict:
    from segmentlog_source.plan.predicates import RowFilter
    from segmentlog_source.plan.read_plan import ReadGroup
    from segmentlog_source.plan.scan_plan import ScanTask
    from segmentlog_source.spark.reader import GroupScan, ScanSettings
    from segmentlog_source.storage.io.local import LOCAL
    from segmentlog_source.storage.log.entry_scan import EntryScan

    settings = ScanSettings(RowFilter(), False, True, True, False, True)
    first, _ = next(iter(EntryScan(LOCAL, path, bodies=False)))
    end = first.end if baseline else Path(path).stat().st_size   # baseline: the first batch
    scan = GroupScan(ReadGroup((ScanTask("events", 0, path, 0, end, 0, 2**63 - 1),)), settings)
    rows = sum(batch.num_rows for batch in scan)
    return {"rows": rows, "bytes_read": scan.stats.bytes_read}


def _columns(n: int, first: int):
    import numpy as np

    from segmentlog_source.format.records import BinaryColumn, RecordColumns

    rng = np.random.default_rng(first)
    values = rng.integers(32, 127, n * 100, dtype=np.uint8)
    keys = rng.integers(48, 58, n * 16, dtype=np.uint8)
    return RecordColumns(timestamps=1_700_000_000_000 + np.arange(first, first + n),
                         keys=BinaryColumn(None, np.arange(n + 1) * 16, keys),
                         values=BinaryColumn(None, np.arange(n + 1) * 100, values))


def append(out: str, baseline: bool) -> dict:
    from segmentlog_source.format.record_encoder import encode_batches
    from segmentlog_source.storage.log.log_config import LogConfig
    from segmentlog_source.storage.log.partition_log import PartitionLog

    block = encode_batches(_columns(BLOCK_BYTES // 116, 0), max_records=100).data
    written = 0
    log = PartitionLog.open_for_append(str(Path(out) / "events-0"),
                                       config=LogConfig(fsync="none"))
    while written < WRITE_BYTES and not baseline:
        log.append(block)     # offsets assigned by the log: the same block, new records
        written += len(block)
    log.close()
    return {"block_bytes": len(block), "bytes_written": written}


def writer(out: str, baseline: bool) -> dict:
    import pyarrow as pa
    from pyspark.sql.types import BinaryType, StructField, StructType

    from segmentlog_source.spark.writer import SegmentLogWriter, plan_write

    _load_encoder()
    cols = _columns(ROWS_PER_ARROW_BATCH, 0)
    batch = pa.RecordBatch.from_arrays(
        [pa.Array.from_buffers(pa.binary(), ROWS_PER_ARROW_BATCH,
                               [None, pa.py_buffer(c.offsets.astype("int32")),
                                pa.py_buffer(c.data)]) for c in (cols.keys, cols.values)],
        ["key", "value"])
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])
    options = {"path": out, "topic": "events", "numPartitions": "1", "fsync": "none"}
    task = SegmentLogWriter(plan_write(options, schema, False, refused=("mode", "overwrite"),
                                       advice="use mode(\"append\")"))
    count = 0 if baseline else -(-WRITE_BYTES // (ROWS_PER_ARROW_BATCH * 116))
    task.commit([task.write(iter([batch] * count))])
    return {"rows": count * ROWS_PER_ARROW_BATCH, "key_and_value_bytes": count * batch.nbytes}


KINDS = {"scan": scan_segment, "append": append, "writer": writer}


# -- the parent ------------------------------------------------------------------------------

def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM). Not ru_maxrss: on Linux that carries the RSS
    the process had before exec, i.e. that of the parent it was forked from (here, a benchmark
    harness holding hundreds of MB), into the child's figure."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / MB
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def measure(kind: str, arg: str, baseline: bool = False) -> dict:
    """Run one child; its result, with `peak_mb` its own peak RSS."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        str(REPO), os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "bench.memory", kind, arg] + (["--baseline"] if baseline else [])
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def _peaks(kind: str, arg: str, label: str, repetitions: int, fresh_dir: bool) -> dict:
    raw: dict[str, list[float]] = {"baseline": [], label: []}
    info = {}
    for _ in range(repetitions):
        for side, baseline in (("baseline", True), (label, False)):
            target = arg
            if fresh_dir:
                target = str(DATA / "memory-write")
                shutil.rmtree(target, ignore_errors=True)
            info = measure(kind, target, baseline) if baseline else measure(kind, target)
            raw[side].append(info["peak_mb"])
    if fresh_dir:
        shutil.rmtree(DATA / "memory-write", ignore_errors=True)
    return {"raw": raw, "info": info}


def run(repetitions: int = REPETITIONS) -> list[dict]:
    from .selective import LOGS  # not at the top: the children must not import pyspark

    logs = {size: dataset("selective", **params) for size, params in LOGS.items()}
    segments = {"1 GiB segment": min((logs["2 GB"] / "events-0").glob("*.log")),
                "100 MB segment": min((logs["100 MB"] / "events-0").glob("*.log"))}
    raw: dict[str, list[float]] = {}
    data = []
    for label, path in segments.items():
        measured = _peaks("scan", str(path), label, repetitions, fresh_dir=False)
        raw.setdefault("baseline", []).extend(measured["raw"]["baseline"])
        raw[label] = measured["raw"][label]
        data.append(f"{label}: {path.stat().st_size / MB:,.0f} MB, "
                    f"{measured['info']['rows']:,} records")
    ratios = {f"peak / {TARGET_MB} MB ({label})": _median(raw[label]) / TARGET_MB
              for label in segments}
    rows = [case("memory: scan one segment (GroupScan)", data="; ".join(data),
                 repetitions=repetitions, raw=raw, unit="MB", ratios=ratios,
                 targets=[(r, 1.0) for r in ratios],
                 notes=_delta_note(raw, list(segments)))]
    for kind, name in (("append", "memory: write 1 GiB (PartitionLog.append)"),
                       ("writer", "memory: write 1 GiB (spark writer task + commit, no Spark)")):
        label = "write 1 GiB"
        try:
            measured = _peaks(kind, "", label, repetitions, fresh_dir=True)
        except (RuntimeError, ImportError) as err:
            rows.append(case(name, data="", repetitions=0, raw={}, ratios={},
                             notes=f"not available: {str(err).splitlines()[-1]}"))
            continue
        ratio = {f"peak / {TARGET_MB} MB": _median(measured["raw"][label]) / TARGET_MB}
        details = ", ".join(f"{k} {v:,}" for k, v in measured["info"].items() if k != "peak_mb")
        rows.append(case(name, data=f"1 GiB: {details}", repetitions=repetitions,
                         raw=measured["raw"], unit="MB", ratios=ratio,
                         targets=[(next(iter(ratio)), 1.0)],
                         notes=_delta_note(measured["raw"], [label])))
    return rows


def _median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def _delta_note(raw: dict, labels: list[str]) -> str:
    base = _median(raw["baseline"])
    return "above the baseline: " + ", ".join(f"{label} +{_median(raw[label]) - base:.0f} MB"
                                               for label in labels)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in KINDS:
        result = KINDS[sys.argv[1]](sys.argv[2], "--baseline" in sys.argv)
        print(json.dumps({**result, "peak_mb": peak_rss_mb()}))
    else:
        print(json.dumps(run(), indent=1))
