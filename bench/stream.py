"""Streaming reads (issues #19, #37): a stream over a backlog against the batch read of the same
data and against a streaming ceiling, and how long an append takes to be visible in a
segmentlog sink downstream, against the same tailing query over a ceiling.

Throughput: 2,000,000 records (16 B keys, 100 B values, 4 partitions, 100 records per batch,
generated once into bench/data), each side into Spark's `noop` sink, taking turns (3
repetitions after a warm-up): the batch reader (`spark.read...load()`); `spark.readStream` with
Trigger.AvailableNow, `maxOffsetsPerTrigger` unset (one micro-batch) and 500,000 (four
micro-batches); and the same two queries over the **streaming ceiling**.

The ceiling (`segmentlog_stream_ceiling`) is a Python stream source that does no work of its
own: before the timed runs the harness drives segmentlog's stream reader over the log as the
engine does under AvailableNow (initialOffset, prepareForTriggerAvailableNow, then latestOffset
and partitions per trigger, under the same read limit) and pickles what it planned: the start
offsets, the end the query stops at and the ReadGroups of every micro-batch. The ceiling
answers latestOffset from those ends with segmentlog's own admission arithmetic
(plan/admission.py: no file is opened), partitions() with the same groups as InputPartitions
(so the same offsets per micro-batch, in the same Spark tasks), and read() with segmentlog's
own RecordBatches of that group, decoded once per worker process by bench/spark_scan.py's
`prebuilt` (the batch ceiling's) and kept: a trigger costs only what Spark and PySpark's
Python stream runner cost, which every Python stream source pays. The harness checks that both
queries ran the same micro-batches (rows per batch) and that no worker decoded inside a timed
run. Target: the stream within 1.15x of its ceiling, whole query and inside the micro-batches;
the stream against the batch read is shown for information (the old 1.3x target of #19 was a
target on Spark's own cost per trigger, which no Python source avoids).

Per micro-batch: each query's progress events (durationMs: triggerExecution, latestOffset,
queryPlanning, addBatch, walCommit, commitOffsets), the mean over the micro-batches that read
rows, per repetition; medians of those.

Latency: a separate process (`python -m bench.stream append DIR SECONDS [ARROW_DIR]`) appends
one priming batch of 50 records, and once told `go` on its stdin, a batch of 50 every 100 ms for
30 s, each record's timestamp its append time. A query tails the directory (processingTime
trigger of 0 s) into a segmentlog sink (`out`, 1 partition, so output offset k is input offset
k); a poller reads the sink's committed end every 10 ms. The harness says `go` once the priming
batch is in the sink, so the timed records all meet a running query: a query's start-up is not
a latency (in a fresh session on a loaded 2-core machine, its first micro-batch took 35-47 s,
Python daemons starting one after another, longer than the appends). Latency of record k: when
the sink's end first passed k, minus its append time. Reported: p50 and p99 of the timed
records, medians of LATENCY_REPETITIONS runs per side, the sides taking turns after one short
warm-up run each (not kept). A query that fails, or does not reach its first commit or the
appender's last offset in time, is an error saying which.

The latency ceiling (`segmentlog_tail_ceiling`) runs the same query into the same sink, with
the same appender: besides the log, the appender writes each batch's rows as an Arrow IPC file
(`<base offset>.arrow`) and then the log's new end into a one-line file `end` (each written
aside and renamed), in both sides' runs, so both appenders do the same work. The ceiling's
latestOffset reads that one line, its partitions() is one (start, end) range, and read() opens
the batches' Arrow files (nothing decoded): the end of the log known without listing the
directory or opening its logs and indexes, the rows had without reading or decoding Kafka
batches. What remains is the trigger loop, the sink's commit and the poll, which any source
feeding this sink pays; the ratios (stream / ceiling, p50 and p99) say what segmentlog adds to
an append's way to the sink.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from segmentlog_source.compat import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
from segmentlog_source.plan.admission import rate_limit
from segmentlog_source.spark.stream_reader import from_json, to_json

from .common import case, dataset, describe, ratio, spark_session, take_turns
from .spark_scan import build_count, prebuilt

BASE = dict(topics=["events"], partitions=4, codec="none", key_size=16, value_size=100,
            records_per_batch=100, timestamp_step_ms=1, start_timestamp=1_700_000_000_000,
            seed=5, records=2_000_000)
REPETITIONS = 3
TARGET = 1.15                    # the stream / its ceiling
MAX_OFFSETS = 500_000            # four micro-batches of the 2M backlog
PHASES = ("triggerExecution", "latestOffset", "queryPlanning", "addBatch", "walCommit",
          "commitOffsets")
APPEND_SECONDS, APPEND_EVERY_S, APPEND_RECORDS = 30, 0.1, 50
LATENCY_REPETITIONS = 3
WARMUP_SECONDS = 5               # each side's warm-up run (not kept)
START_TIMEOUT_S = 300            # a tailing query's start-up, to its first commit
DRAIN_TIMEOUT_S = 120            # from the last append to the sink's end reaching it


# -- the streaming ceiling -----------------------------------------------------------------------

def _key(start: dict, end: dict) -> str:
    return json.dumps([start, end], sort_keys=True)


def ceiling_spec(path: Path, max_offsets: int | None, out: Path) -> Path:
    """What segmentlog's stream reader plans for an AvailableNow query from the earliest offsets
    of `path`, driven as the engine drives it, pickled to `out` for the ceiling."""
    from segmentlog_source.plan.stream_options import parse_stream_options
    from segmentlog_source.spark.stream_reader import SegmentLogStreamReader

    options = {"path": str(path), "startingOffsets": "earliest"}
    if max_offsets:
        options["maxOffsetsPerTrigger"] = str(max_offsets)
    reader = SegmentLogStreamReader(parse_stream_options(options))
    initial = json.loads(json.dumps(reader.initialOffset()))
    reader.prepareForTriggerAvailableNow()
    limit = reader.getDefaultReadLimit()
    groups, batches, start = [], {}, initial
    while True:
        end = json.loads(json.dumps(reader.latestOffset(start, limit)))
        if end == start:
            break
        planned = [p.group for p in reader.partitions(start, end)]
        batches[_key(start, end)] = list(range(len(groups), len(groups) + len(planned)))
        groups += planned
        start = end
    out.write_bytes(pickle.dumps({"initial": initial, "target": start,
                                  "max_offsets": max_offsets, "batches": batches,
                                  "groups": groups}))
    return out


class CeilingGroup(InputPartition):
    def __init__(self, index: int):
        self.index = index


class StreamCeilingReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options):
        self.spec_path = options["spec"]
        self.build_log = options.get("buildLog")
        spec = pickle.loads(Path(self.spec_path).read_bytes())
        self.initial, self.batches = spec["initial"], spec["batches"]
        self.max_offsets = spec["max_offsets"]
        self.target = from_json(spec["target"])

    def initialOffset(self) -> dict:
        return self.initial

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_offsets) if self.max_offsets else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """(the end is the one the harness saw)"""

    def latestOffset(self, start: dict, limit) -> dict:
        ends = self.target
        if isinstance(limit, ReadMaxRows):
            ends = rate_limit(from_json(start), ends, limit.max_rows)
        return to_json(ends)

    def partitions(self, start: dict, end: dict):
        return [CeilingGroup(i) for i in self.batches[_key(start, end)]]

    def read(self, partition):
        spec = self.spec_path
        batches = prebuilt(spec, lambda: pickle.loads(Path(spec).read_bytes())["groups"], True,
                           self.build_log)
        return iter(batches[partition.index])

    def commit(self, end: dict) -> None:
        pass


class StreamCeilingSource(DataSource):
    """segmentlog's micro-batches, planned and decoded before the query: see the docstring."""

    @classmethod
    def name(cls) -> str:
        return "segmentlog_stream_ceiling"

    def schema(self):
        from segmentlog_source.spark.schema import spark_ddl

        return spark_ddl(True)

    def streamReader(self, schema):
        return StreamCeilingReader(self.options)


# -- the latency ceiling -------------------------------------------------------------------------

class TailRange(InputPartition):
    def __init__(self, start: int, end: int):
        self.start, self.end = start, end


class TailCeilingReader(DataSourceStreamReader):
    """The appender's own Arrow batches, its end read from one small file (see the docstring)."""

    def __init__(self, options):
        self.arrow = Path(options["arrow"])

    def initialOffset(self) -> dict:
        return {"t": {"0": 0}}

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        try:
            end = int((self.arrow / "end").read_text())
        except FileNotFoundError:
            end = 0
        return {"t": {"0": end}}

    def partitions(self, start: dict, end: dict):
        first, last = start["t"]["0"], end["t"]["0"]
        return [TailRange(first, last)] if last > first else []

    def read(self, partition):
        import pyarrow as pa

        for base in range(partition.start, partition.end, APPEND_RECORDS):
            data = pa.py_buffer((self.arrow / f"{base}.arrow").read_bytes())
            yield pa.ipc.open_file(data).get_batch(0)     # (no copy, no decoding)

    def commit(self, end: dict) -> None:
        pass


class TailCeilingSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "segmentlog_tail_ceiling"

    def schema(self):
        from segmentlog_source.spark.schema import spark_ddl

        return spark_ddl(True)

    def streamReader(self, schema):
        return TailCeilingReader(self.options)


# -- the benchmark -------------------------------------------------------------------------------

def run(repetitions: int = REPETITIONS) -> list[dict]:
    return [*_throughput(repetitions), _latency(LATENCY_REPETITIONS)]


def _throughput(repetitions: int) -> list[dict]:
    spark = spark_session()
    spark.dataSource.register(StreamCeilingSource)
    path = dataset("stream", **BASE)
    work = Path(tempfile.mkdtemp(prefix="stream-ceiling-"))
    try:
        return _throughput_in(spark, path, work, repetitions)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _throughput_in(spark, path: Path, work: Path, repetitions: int) -> list[dict]:
    build_log = work / "builds.log"
    specs = {m: str(ceiling_spec(path, m, work / f"spec-{m or 'all'}.pkl"))
             for m in (None, MAX_OFFSETS)}

    def batch():
        spark.read.format("segmentlog").load(str(path)).write.format("noop").mode(
            "overwrite").save()

    progress: dict[str, list[list[dict]]] = {}   # side -> per run, its micro-batches' progress

    def stream(side: str, ceiling: bool, max_offsets=None):
        def go():
            with tempfile.TemporaryDirectory() as chk:
                if ceiling:
                    reader = (spark.readStream.format("segmentlog_stream_ceiling")
                              .option("spec", specs[max_offsets])
                              .option("buildLog", str(build_log)))
                else:
                    reader = spark.readStream.format("segmentlog").option("startingOffsets",
                                                                           "earliest")
                    if max_offsets:
                        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
                query = (reader.load(str(path)).writeStream.format("noop")
                         .option("checkpointLocation", chk).trigger(availableNow=True).start())
                query.awaitTermination()
                progress.setdefault(side, []).append(
                    [p for p in query.recentProgress if p["numInputRows"]])
        return go

    sides = {"batch read": batch,
             "stream": stream("stream", False), "ceiling": stream("ceiling", True),
             "stream, 500k": stream("stream, 500k", False, MAX_OFFSETS),
             "ceiling, 500k": stream("ceiling, 500k", True, MAX_OFFSETS)}
    # the warm-up: every side once, the ceiling's workers decode their batches
    for fn in sides.values():
        fn()
    _same_micro_batches(progress)
    builds = build_count(build_log)
    raw = take_turns(sides, repetitions, warmups=0)
    rebuilt = build_count(build_log) - builds
    runs = {side: got[-repetitions:] for side, got in progress.items()}
    for side in ("stream, 500k", "ceiling, 500k"):        # seconds inside the micro-batches
        raw[f"{side}, in micro-batches"] = [
            sum(p["durationMs"]["triggerExecution"] for p in run) / 1000 for run in runs[side]]
    data = describe(path, BASE)
    notes = (f"ceiling's workers decoded again {rebuilt}x during timed runs; " if rebuilt
             else "") + "ceiling: segmentlog's micro-batches planned and decoded beforehand"
    rows = []
    for what, stream_side, ceiling_side in (
            ("AvailableNow, one micro-batch, whole query", "stream", "ceiling"),
            ("AvailableNow, 4 micro-batches, whole query", "stream, 500k", "ceiling, 500k"),
            ("sustained: 4 micro-batches' own time", "stream, 500k, in micro-batches",
             "ceiling, 500k, in micro-batches")):
        sub = {"batch read": raw["batch read"], "stream": raw[stream_side],
               "ceiling": raw[ceiling_side]}
        rows.append(case(f"readStream ({what}) vs its ceiling and the batch read", data=data,
                         repetitions=repetitions, raw=sub,
                         ratios={"stream / ceiling": ratio(sub, "stream", "ceiling"),
                                 "stream / batch read": ratio(sub, "stream", "batch read"),
                                 "ceiling / batch read": ratio(sub, "ceiling", "batch read")},
                         targets=[("stream / ceiling", TARGET)], notes=notes))
    for phase in PHASES:
        sub = {side: [_mean_ms(run, phase) for run in runs[side]]
               for side in ("stream, 500k", "ceiling, 500k")}
        sub = {"stream": sub["stream, 500k"], "ceiling": sub["ceiling, 500k"]}
        rows.append(case(f"per micro-batch (4 x 500k, AvailableNow): {phase}", data=data,
                         repetitions=repetitions, unit="ms", raw=sub,
                         ratios={"stream / ceiling": ratio(sub, "stream", "ceiling")},
                         notes="mean over a run's micro-batches, from the query's progress"))
    return rows


def _mean_ms(micro_batches: list[dict], phase: str) -> float:
    return statistics.mean(p["durationMs"].get(phase, 0) for p in micro_batches)


def _same_micro_batches(progress: dict) -> None:
    """The ceiling ran segmentlog's micro-batches: the same rows in each, in the same order."""
    def shape(side):
        return [p["numInputRows"] for p in progress[side][-1]]
    for stream_side, ceiling_side in (("stream", "ceiling"), ("stream, 500k", "ceiling, 500k")):
        if shape(stream_side) != shape(ceiling_side):
            raise AssertionError(f"{ceiling_side} ran other micro-batches than {stream_side}: "
                                 f"{shape(ceiling_side)} vs {shape(stream_side)} rows")


def _latency(repetitions: int, sides=("stream", "ceiling")) -> dict:
    spark = spark_session()
    spark.dataSource.register(TailCeilingSource)
    # a query whose task is stuck: stop() raises after this instead of waiting for ever
    spark.conf.set("spark.sql.streaming.stopTimeout", "60s")
    raw: dict[str, list[float]] = {}
    seen_notes = []
    for side in sides:      # the warm-up, not kept: the sink's and the workers' first runs
        _latency_run(spark, side == "ceiling", WARMUP_SECONDS)
    for _ in range(repetitions):
        for side in sides:
            pct, note = _latency_run(spark, side == "ceiling", APPEND_SECONDS)
            for name, value in pct.items():
                raw.setdefault(f"{side} {name}", []).append(value)
            seen_notes.append(f"{side}: {note}")
    ratios = {f"{p} stream / ceiling": ratio(raw, f"stream {p}", f"ceiling {p}")
              for p in ("p50", "p99") if "ceiling" in sides}
    appended = APPEND_SECONDS / APPEND_EVERY_S * APPEND_RECORDS
    against = ", against a tailing ceiling" if "ceiling" in sides else ""
    return case(f"readStream -> segmentlog sink: append to visible{against}",
                data=f"about {appended:,.0f} records appended by another process, "
                     f"{APPEND_RECORDS} every {APPEND_EVERY_S * 1000:.0f} ms for "
                     f"{APPEND_SECONDS} s",
                repetitions=repetitions, unit="ms", raw=raw, ratios=ratios,
                notes="p50 and p99 over the records appended after the sink's first commit "
                      "(the query's start-up is not in them); " + "; ".join(seen_notes))


def _latency_run(spark, ceiling: bool, seconds: float) -> tuple[dict, str]:
    """One tailing query into a segmentlog sink while the appender runs: the percentiles of
    the timed records' latencies, and a note (records seen, seconds to the first commit)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "in").mkdir()
        (base / "arrow").mkdir()
        appender = subprocess.Popen([sys.executable, "-m", "bench.stream", "append",
                                     str(base / "in" / "t-0"), str(seconds),
                                     str(base / "arrow")],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                    cwd=Path(__file__).resolve().parent.parent)
        seen: list[tuple[float, int]] = []          # (wall time, sink end) when it moved
        done = threading.Event()
        poller = threading.Thread(target=_poll, args=(base / "out", seen, done), daemon=True)
        query = None
        try:
            if appender.stdout.readline().strip() != "primed":
                raise RuntimeError(f"the appender stopped before its first batch "
                                   f"(exit {appender.wait()})")
            started = time.time()
            if ceiling:
                source = spark.readStream.format("segmentlog_tail_ceiling").option(
                    "arrow", str(base / "arrow")).load()
            else:
                source = spark.readStream.format("segmentlog").option(
                    "startingOffsets", "earliest").load(str(base / "in"))
            query = (source.writeStream.format("segmentlog")
                     .option("topic", "out").option("numPartitions", "1")
                     .option("checkpointLocation", str(base / "chk"))
                     .trigger(processingTime="0 seconds").start(str(base / "out")))
            poller.start()
            # the timed appends begin once the priming batch is in the sink (the docstring)
            _wait(lambda: seen, query, START_TIMEOUT_S, "its first commit")
            first_commit = seen[0][0] - started
            appender.stdin.write("go\n")
            appender.stdin.flush()
            appender.wait(timeout=seconds + 60)
            total = _input_end(base / "in")
            _wait(lambda: seen[-1][1] >= total, query, DRAIN_TIMEOUT_S,
                  f"offset {total:,} (the appender's last)")
        finally:
            done.set()
            if poller.is_alive():
                poller.join()
            if query is not None:
                query.stop()
            if appender.poll() is None:
                appender.kill()
                appender.wait()
        appended = _append_times(base / "in")
    latencies, k = [], 0
    for wall, end in seen:
        while k < min(end, len(appended)):
            latencies.append((wall - appended[k]) * 1000)
            k += 1
    timed = latencies[APPEND_RECORDS:]              # (the priming batch is not timed)
    pct = {"p50": statistics.median(timed), "p99": statistics.quantiles(timed, n=100)[98]}
    return pct, f"{len(timed):,} records timed, first commit {first_commit:.1f} s after start"


def _wait(ready, query, timeout_s: float, what: str) -> None:
    """Until `ready()`; a query that failed, or `timeout_s` without it, is an error naming
    what was awaited (never a wait without end, never an empty measurement)."""
    deadline = time.time() + timeout_s
    looked = 0.0
    while not ready():
        if time.time() - looked > 1:     # (a call into the JVM: once a second)
            looked = time.time()
            if query.exception() is not None:
                raise RuntimeError(f"the tailing query failed before {what}: "
                                   f"{query.exception()}")
            if looked > deadline:
                raise TimeoutError(f"the tailing query did not reach {what} in "
                                   f"{timeout_s:.0f} s (status: {query.status['message']})")
        time.sleep(0.05)


def _poll(out: Path, seen: list, done: threading.Event) -> None:
    from segmentlog_source.plan.options import parse_read_options
    from segmentlog_source.plan.read_plan import stream_offsets

    last = 0
    while not done.is_set():
        try:
            if (out / "out-0").exists():
                ends = stream_offsets(parse_read_options({"path": str(out)}))
                end = sum(o.end for o in ends.values())
                if end > last:
                    seen.append((time.time(), end))
                    last = end
        except Exception:  # noqa: BLE001 - a listing raced a commit: look again
            pass
        time.sleep(0.01)


def _input_end(path: Path) -> int:
    from segmentlog_source.storage.log.partition_log import PartitionLog

    return PartitionLog.open(str(path / "t-0")).log_end_offset


def _append_times(path: Path) -> list[float]:
    """Each input record's append time (its timestamp), in seconds, by offset."""
    from segmentlog_source.storage.log.partition_log import PartitionLog

    log = PartitionLog.open(str(path / "t-0"))
    times = []
    for _, header, _ in log.iter_entries():
        times += [header.max_timestamp / 1000] * header.records_count
    return times


def append(path: str, seconds: float, arrow_dir: str | None = None) -> None:
    """The appender: one priming batch, then (once told `go` on stdin) a batch of
    APPEND_RECORDS every APPEND_EVERY_S for `seconds`, each timestamped now; with `arrow_dir`,
    each batch's rows also as `<base offset>.arrow` and the log end in `end`."""
    from segmentlog_source.format.record_encoder import encode_batch
    from segmentlog_source.format.records import Record
    from segmentlog_source.storage.log.log_config import LogConfig
    from segmentlog_source.storage.log.partition_log import PartitionLog

    log = PartitionLog.open_for_append(path, topic="t", partition=0,
                                       config=LogConfig(segment_bytes=1 << 20, fsync="none"))

    def one_batch():
        now = int(time.time() * 1000)
        first, last = log.append(encode_batch([Record(k, now, None, b"v" * 100)
                                               for k in range(APPEND_RECORDS)]))
        if arrow_dir:
            _write_arrow(Path(arrow_dir), first, last + 1, now)

    one_batch()
    print("primed", flush=True)
    if sys.stdin.readline().strip() != "go":     # the harness went away
        log.close()
        return
    start = time.time()
    while time.time() < start + seconds:
        one_batch()
        time.sleep(APPEND_EVERY_S)
    log.close()


def _write_arrow(directory: Path, first: int, end: int, timestamp_ms: int) -> None:
    """Offsets [first, end) of topic t, partition 0, as the rows segmentlog reads them."""
    import pyarrow as pa

    from segmentlog_source.spark.schema import arrow_schema

    n = end - first
    columns = {"key": pa.nulls(n, pa.binary()),
               "value": pa.array([b"v" * 100] * n, pa.binary()),
               "topic": pa.array(["t"] * n, pa.string()),
               "partition": pa.array([0] * n, pa.int32()),
               "offset": pa.array(range(first, end), pa.int64()),
               "timestamp": pa.array([timestamp_ms * 1000] * n, pa.timestamp("us", tz="UTC")),
               "timestampType": pa.array([0] * n, pa.int32())}
    schema = arrow_schema(True)
    batch = pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)
    for name, write in ((f"{first}.arrow", lambda f: _ipc(f, batch)),
                        ("end", lambda f: f.write(str(end).encode()))):
        aside = directory / f".{name}.tmp"
        with aside.open("wb") as f:
            write(f)
        os.replace(aside, directory / name)


def _ipc(f, batch) -> None:
    import pyarrow as pa

    with pa.ipc.new_file(f, batch.schema) as writer:
        writer.write_batch(batch)


if __name__ == "__main__":
    if sys.argv[1:2] == ["append"]:
        append(sys.argv[2], float(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        from .run import write_alone

        started = time.perf_counter()
        rows = run()
        write_alone("stream", rows, time.perf_counter() - started)
