"""Peak resident memory of a Python process that scans one big segment or writes 1 GiB.

Each measurement is a fresh child process (`python -m bench.memory <kind> ...`) reporting its
own peak RSS (VmHWM; see peak_rss_mb). The same child run with `--baseline` does every
import and set-up but not the work: the interpreter and library floor. Both first load the
compiled kernels the work uses (`_load_kernels`: loading one from numba's cache costs several
MB, which are the library's, not the data's), and each child reports the kernels it has loaded:
a kernel only the work loaded is named in the row's notes.
* scan: spark.reader.GroupScan over one whole segment, payload decoded, batches dropped as they
  come: the first (1 GiB) segment of bench/selective.py's 2 GB log, and the 100 MB log's one
  (the baseline reads only the first batch).
* append: storage's PartitionLog.append into a new log: one 16 MiB block of v2 batches
  (100-byte values, 16-byte keys, 100 per batch), encoded once, appended until 1 GiB is written
  (the log assigns offsets, so every append is new records).
* writer: the Spark writer's task and commit code (spark/writer.py: SegmentLogWriter.write then
  commit, called without Spark), given 1 GiB of values as Arrow batches of 65,536 rows (the
  baseline builds the batch and commits an empty write).
Target: what the work adds to its process, peak minus the baseline's peak (the two run back to
back, the median of the differences), <= 64 MB for the scan of a 1 GiB segment and for the
writer task of 1 GiB. The absolute peaks (mostly pyspark, pyarrow and numba imported) are
reported beside.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import shutil
import subprocess
import sys

from .common import DATA, MB, REPO, case, dataset

TARGET_MB = 64          # above the baseline
REPETITIONS = 3
WRITE_BYTES = 1024**3
BLOCK_BYTES = 16 * 1024**2
ROWS_PER_ARROW_BATCH = 65_536


# -- the children ----------------------------------------------------------------------------

def _load_kernels():
    """Run the compiled kernels the writes use on two records, so that loading them counts in
    the baseline as in the work: the encoder, the partitioner, the header walk of the commit's
    runs. (The scan's decoders load as its baseline reads a batch.)"""
    import numpy as np

    from segmentlog_source.format.header_walk import new_rows, walk_v2_headers
    from segmentlog_source.format.partitioner import partitions_for_keys
    from segmentlog_source.format.record_encoder import encode_batches
    from segmentlog_source.format.records import RecordColumns

    data = encode_batches(RecordColumns(timestamps=np.zeros(2, np.int64))).data
    walk_v2_headers(np.frombuffer(data, np.uint8), 0, 0, len(data), new_rows(1))
    partitions_for_keys([b"a", b"b"], 2)


def loaded_kernels() -> list[str]:
    """segmentlog's compiled kernels this process has loaded (or compiled)."""
    from numba.core.registry import CPUDispatcher

    return sorted({f"{name.rsplit('.', 1)[-1]}.{attr}"
                   for name, module in list(sys.modules.items())
                   if name.startswith("segmentlog_source")
                   for attr, value in vars(module).items()
                   if isinstance(value, CPUDispatcher) and value.signatures})


def scan_segment(path: str, baseline: bool) -> dict:
    from segmentlog_source.plan.predicates import RowFilter
    from segmentlog_source.plan.read_plan import ReadGroup
    from segmentlog_source.plan.scan_plan import ScanTask
    from segmentlog_source.spark.reader import GroupScan, ScanSettings
    from segmentlog_source.storage.io.local import LOCAL
    from segmentlog_source.storage.log.entry_scan import EntryScan

    _load_kernels()
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

    _load_kernels()
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

    _load_kernels()
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
    """Baseline and work run back to back, `repetitions` times: their peaks, the work's peak
    above the baseline's in each pair, and the kernels only the work loaded."""
    raw: dict[str, list[float]] = {"baseline": [], label: [], _above(label): []}
    info, kernels = {}, {}
    for _ in range(repetitions):
        for side, baseline in (("baseline", True), (label, False)):
            target = arg
            if fresh_dir:
                target = str(DATA / "memory-write")
                shutil.rmtree(target, ignore_errors=True)
            info = measure(kind, target, baseline)
            raw[side].append(info["peak_mb"])
            kernels[side] = set(info.pop("kernels"))
        raw[_above(label)].append(raw[label][-1] - raw["baseline"][-1])
    if fresh_dir:
        shutil.rmtree(DATA / "memory-write", ignore_errors=True)
    return {"raw": raw, "info": info, "only_work": sorted(kernels[label] - kernels["baseline"])}


def _above(label: str) -> str:
    return f"{label} above the baseline"


def _ratio_name(label: str) -> str:
    return f"(peak - baseline) / {TARGET_MB} MB ({label})"


def _notes(measured: list[tuple[str, dict]]) -> str:
    notes = ["peak above the baseline run just before it (median of the pairs): " + ", ".join(
        f"{label} +{_median(m['raw'][_above(label)]):.0f} MB" for label, m in measured)]
    extra = sorted({k for _, m in measured for k in m["only_work"]})
    if extra:
        notes.append(f"kernels loaded by the work only: {', '.join(extra)}")
    return "; ".join(notes)


def run(repetitions: int = REPETITIONS) -> list[dict]:
    from .selective import LOGS  # not at the top: the children must not import pyspark

    logs = {size: dataset("selective", **params) for size, params in LOGS.items()}
    segments = {"1 GiB segment": min((logs["2 GB"] / "events-0").glob("*.log")),
                "100 MB segment": min((logs["100 MB"] / "events-0").glob("*.log"))}
    targeted = {"1 GiB segment", "writer"}
    raw: dict[str, list[float]] = {}
    data, measured = [], []
    for label, path in segments.items():
        m = _peaks("scan", str(path), label, repetitions, fresh_dir=False)
        measured.append((label, m))
        raw.setdefault("baseline", []).extend(m["raw"]["baseline"])
        raw[label], raw[_above(label)] = m["raw"][label], m["raw"][_above(label)]
        data.append(f"{label}: {path.stat().st_size / MB:,.0f} MB, {m['info']['rows']:,} records")
    ratios = {_ratio_name(label): _median(raw[_above(label)]) / TARGET_MB for label in segments}
    rows = [case("memory: scan one segment (GroupScan)", data="; ".join(data),
                 repetitions=repetitions, raw=raw, unit="MB", ratios=ratios,
                 targets=[(_ratio_name(label), 1.0) for label in segments if label in targeted],
                 notes=_notes(measured))]
    for kind, name in (("append", "memory: write 1 GiB (PartitionLog.append)"),
                       ("writer", "memory: write 1 GiB (spark writer task + commit, no Spark)")):
        label = "write 1 GiB"
        try:
            m = _peaks(kind, "", label, repetitions, fresh_dir=True)
        except (RuntimeError, ImportError) as err:
            rows.append(case(name, data="", repetitions=0, raw={}, ratios={},
                             notes=f"not available: {str(err).splitlines()[-1]}"))
            continue
        ratio = {_ratio_name(label): _median(m["raw"][_above(label)]) / TARGET_MB}
        details = ", ".join(f"{k} {v:,}" for k, v in m["info"].items() if k != "peak_mb")
        rows.append(case(name, data=f"1 GiB: {details}", repetitions=repetitions,
                         raw=m["raw"], unit="MB", ratios=ratio,
                         targets=[(next(iter(ratio)), 1.0)] if kind in targeted else [],
                         notes=_notes([(label, m)])))
    return rows


def _median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in KINDS:
        result = KINDS[sys.argv[1]](sys.argv[2], "--baseline" in sys.argv)
        print(json.dumps({**result, "peak_mb": peak_rss_mb(), "kernels": loaded_kernels()}))
    else:
        print(json.dumps(run(), indent=1))
