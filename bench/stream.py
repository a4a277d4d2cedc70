"""Streaming reads (issue #19): a tailing query's throughput against the batch reader on the
same data, and how long an append takes to be visible in a segmentlog sink downstream.

Throughput: 2,000,000 records (16 B keys, 100 B values, 4 partitions, 100 records per batch,
generated once into bench/data). Side by side, taking turns (3 repetitions after a warm-up):
the batch reader (`spark.read...load()`) into Spark's `noop` sink, and `spark.readStream` with
Trigger.AvailableNow into the `noop` sink, `maxOffsetsPerTrigger` unset and 500,000 (four
micro-batches). Target: the stream within 1.3x of the batch read.

Latency: a separate process (`python -m bench.stream append DIR SECONDS`) appends a batch of
50 records every 100 ms for 30 s, each record's timestamp its append time; a query tails the
directory (processingTime trigger of 0 s) into a segmentlog sink (`out`, 1 partition, so output
offset k is input offset k); a poller reads the sink's committed end every 10 ms. Latency of
record k: when the sink's end first passed k, minus its append time. Reported: p50 and p99.
"""

from __future__ import annotations

from pathlib import Path
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from .common import case, dataset, describe, ratio, spark_session, take_turns

BASE = dict(topics=["events"], partitions=4, codec="none", key_size=16, value_size=100,
            records_per_batch=100, timestamp_step_ms=1, start_timestamp=1_700_000_000_000,
            seed=5, records=2_000_000)
REPETITIONS = 3
TARGET = 1.3
APPEND_SECONDS, APPEND_EVERY_S, APPEND_RECORDS = 30, 0.1, 50


def run(repetitions: int = REPETITIONS) -> list[dict]:
    return [*_throughput(repetitions), _latency()]


def _throughput(repetitions: int) -> list[dict]:
    spark = spark_session()
    path = dataset("stream", **BASE)

    def batch():
        spark.read.format("segmentlog").load(str(path)).write.format("noop").mode(
            "overwrite").save()

    in_batches: list[float] = []     # seconds inside micro-batches (the query's progress)

    def stream(max_offsets=None):
        def go():
            with tempfile.TemporaryDirectory() as chk:
                reader = spark.readStream.format("segmentlog").option("startingOffsets",
                                                                       "earliest")
                if max_offsets:
                    reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
                query = (reader.load(str(path)).writeStream.format("noop")
                         .option("checkpointLocation", chk).trigger(availableNow=True).start())
                query.awaitTermination()
                if max_offsets:
                    in_batches.append(sum(p["durationMs"]["triggerExecution"]
                                          for p in query.recentProgress
                                          if p["numInputRows"]) / 1000)
        return go

    raw = take_turns({"batch read": batch, "stream, one micro-batch": stream(),
                      "stream, 500k per trigger": stream(500_000)}, repetitions)
    # (the warm-up's run is the first; the repetitions' follow, in turn with the batch reads)
    raw["stream, inside micro-batches"] = in_batches[-repetitions:]
    data = describe(path, BASE)
    rows = []
    for side, what in (("stream, one micro-batch", "AvailableNow, one micro-batch, whole query"),
                       ("stream, 500k per trigger", "AvailableNow, 4 micro-batches, whole query"),
                       ("stream, inside micro-batches", "sustained: 4 micro-batches' own time")):
        name = "stream / batch read"
        rows.append(case(f"readStream ({what}) vs batch read", data=data,
                         repetitions=repetitions,
                         raw={"batch read": raw["batch read"], "stream": raw[side]},
                         ratios={name: ratio(raw, side, "batch read")},
                         targets=[(name, TARGET)]))
    return rows


def _latency() -> dict:
    spark = spark_session()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "in").mkdir()
        appender = subprocess.Popen([sys.executable, "-m", "bench.stream", "append",
                                     str(base / "in" / "t-0"), str(APPEND_SECONDS)],
                                    stdout=subprocess.PIPE, text=True,
                                    cwd=Path(__file__).resolve().parent.parent)
        assert appender.stdout.readline().strip() == "ready"
        query = (spark.readStream.format("segmentlog").option("startingOffsets", "earliest")
                 .load(str(base / "in")).writeStream.format("segmentlog")
                 .option("topic", "out").option("numPartitions", "1")
                 .option("checkpointLocation", str(base / "chk"))
                 .trigger(processingTime="0 seconds").start(str(base / "out")))
        seen: list[tuple[float, int]] = []          # (wall time, sink end) when it moved
        done = threading.Event()
        poller = threading.Thread(target=_poll, args=(base / "out", seen, done))
        poller.start()
        appender.communicate(timeout=APPEND_SECONDS + 60)
        total = _input_end(base / "in")
        deadline = time.time() + 120
        while (not seen or seen[-1][1] < total) and time.time() < deadline:
            time.sleep(0.05)
        done.set()
        poller.join()
        query.stop()
        appended = _append_times(base / "in")
    latencies, k = [], 0
    for wall, end in seen:
        while k < min(end, len(appended)):
            latencies.append((wall - appended[k]) * 1000)
            k += 1
    # steady state: records appended after the sink's first commit (the query's start, a few
    # seconds of JVM and Python workers, is a start-up cost, not a latency)
    running = [lat for lat, at in zip(latencies, appended) if seen and at > seen[0][0]]
    pct = {"p50": statistics.median(running),
           "p99": statistics.quantiles(running, n=100)[98],
           "p99 incl. start-up": statistics.quantiles(latencies, n=100)[98]}
    return case("readStream -> segmentlog sink: append to visible",
                data=f"{len(appended):,} records appended by another process, {APPEND_RECORDS} "
                     f"every {APPEND_EVERY_S * 1000:.0f} ms for {APPEND_SECONDS} s",
                repetitions=1, unit="ms", raw={k: [v] for k, v in pct.items()}, ratios={},
                notes=f"{len(latencies):,} of {len(appended):,} records seen in the sink; p50 "
                      f"and p99 over the {len(running):,} appended once it ran")


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


def append(path: str, seconds: float) -> None:
    """The appender: a batch of APPEND_RECORDS every APPEND_EVERY_S, timestamped now."""
    from segmentlog_source.format.record_encoder import encode_batch
    from segmentlog_source.format.records import Record
    from segmentlog_source.storage.log.log_config import LogConfig
    from segmentlog_source.storage.log.partition_log import PartitionLog

    log = PartitionLog.open_for_append(path, topic="t", partition=0,
                                       config=LogConfig(segment_bytes=1 << 20, fsync="none"))
    print("ready", flush=True)
    start = time.time()
    while time.time() < start + seconds:
        now = int(time.time() * 1000)
        log.append(encode_batch([Record(k, now, None, b"v" * 100)
                                 for k in range(APPEND_RECORDS)]))
        time.sleep(APPEND_EVERY_S)
    log.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["append"]:
        append(sys.argv[2], float(sys.argv[3]))
