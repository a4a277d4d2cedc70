"""What every benchmark shares: generated data (made once, reused), timing, result rows, Spark.

A result row ("case") is a dict:
    name, data (what was read or written), repetitions, unit,
    raw {side: [every measurement]}, median {side: value},
    ratios {"a / b": value}, targets [{ratio, max}], met (all targets met; None if no target),
    notes (optional).
Ratios compare sides measured in the same run, after a warm-up, the sides taking turns; a timing
ratio is the median of the per-repetition ratios (`ratio`), so that a busy neighbour on a shared
machine slows both of its terms alike.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "data"          # git-ignored
# Logs of several GB live outside the repository: $SEGMENTLOG_BENCH_CACHE, or this.
CACHE = Path(os.environ.get("SEGMENTLOG_BENCH_CACHE")
             or Path.home() / ".cache" / "segmentlog" / "bench")
RESULTS = REPO / "bench" / "results"
MB = 1_000_000


# -- data ------------------------------------------------------------------------------------

def dataset(name: str, *, root: Path = DATA, **params) -> Path:
    """A log made by `generate_log(**params)` in `root` (bench/data, or CACHE for the big ones),
    generated once per parameter set.

    The directory is named after a hash of the parameters; `<dir>.json` next to it is written
    last, so a half-written directory (an interrupted run) is made again.
    """
    from segmentlog_source.cli.generate import generate_log

    key = hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]
    path = root / f"{name}-{key}"
    done = root / f"{name}-{key}.json"
    if done.exists() and path.is_dir():
        return path
    if path.exists():
        shutil.rmtree(path)
    root.mkdir(parents=True, exist_ok=True)
    print(f"generating {path}: {params}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    result = generate_log(str(path), **params)
    done.write_text(json.dumps({"params": params, "records": result.total_records,
                                "segments": sum(1 for _ in path.glob("*/*.log")),
                                "log_bytes": log_bytes(path),
                                "seconds": round(time.perf_counter() - start, 1)}, indent=1))
    return path


def upload(s3, path: Path, name: str) -> tuple[str, float]:
    """The tree at `path` copied to s3://bench/<name> on a loopback S3 server (its first upload
    creates the bucket): (its URI, the seconds the upload took)."""
    if not getattr(s3, "bench_bucket", False):
        s3.create_bucket("bench")
        s3.bench_bucket = True
    started = time.perf_counter()
    s3.upload_tree(path, f"s3://bench/{name}")
    return f"s3://bench/{name}", time.perf_counter() - started


def log_bytes(path: Path) -> int:
    """Bytes of every `.log` segment under `path`."""
    return sum(p.stat().st_size for p in Path(path).rglob("*.log"))


def describe(path: Path, params: dict) -> str:
    """One line for the table: records, layout and on-disk size of a generated log."""
    return (f"{params['records']:,} records, {len(params.get('topics', ['?']))} topic x "
            f"{params.get('partitions', 1)} partition(s), {params.get('key_size', 16)} B keys, "
            f"{params.get('value_size', 100)} B values, {params.get('records_per_batch', 100)}"
            f"/batch, {params.get('codec', 'none')}, {log_bytes(path) / MB:,.0f} MB of .log")


# -- timing ----------------------------------------------------------------------------------

def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def take_turns(sides: dict[str, Callable[[], object]], repetitions: int,
               warmups: int = 1, before: Callable[[], object] | None = None
               ) -> dict[str, list[float]]:
    """Seconds of every run of every side: warm-ups first (not kept), then the sides in turn;
    `before` runs ahead of every run, untimed (clearing what the previous side wrote)."""
    for _ in range(warmups):
        for fn in sides.values():
            if before is not None:
                before()
            fn()
    raw: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(repetitions):
        for side, fn in sides.items():
            if before is not None:
                before()
            raw[side].append(timed(fn))
    return raw


def medians(raw: dict[str, list[float]]) -> dict[str, float]:
    return {side: statistics.median(values) for side, values in raw.items() if values}


def ratio(raw: dict[str, list[float]], a: str, b: str) -> float:
    """Median over the repetitions of raw[a][i] / raw[b][i]. The sides of a repetition ran back
    to back, so a busy spell of a shared machine weighs on both terms of each ratio."""
    return statistics.median(x / y for x, y in zip(raw[a], raw[b]))


def case(name: str, *, data: str, repetitions: int, raw: dict, ratios: dict,
         targets: list[tuple[str, float]] = (), unit: str = "s", notes: str = "",
         **extra) -> dict:
    """A result row; `targets` are (ratio name, maximum) pairs, all of which must hold."""
    for ratio, _ in targets:
        if ratio not in ratios:
            raise KeyError(f"target on unknown ratio {ratio!r} of {name}")
    met = all(ratios[r] <= limit for r, limit in targets) if targets else None
    row = {"name": name, "data": data, "repetitions": repetitions, "unit": unit, "raw": raw,
           "median": medians(raw), "ratios": ratios,
           "targets": [{"ratio": r, "max": limit, "met": ratios[r] <= limit}
                       for r, limit in targets],
           "met": met, "notes": notes}
    row.update(extra)
    return row


def unavailable(name: str, reason: str) -> dict:
    """A row saying a benchmark could not run (its module missing or failing)."""
    return {"name": name, "data": "", "repetitions": 0, "unit": "", "raw": {}, "median": {},
            "ratios": {}, "targets": [], "met": None, "notes": f"not available: {reason}"}


# -- Spark -----------------------------------------------------------------------------------

_SPARK = None


def spark_session():
    """The benchmarks' one SparkSession: local[2], workers on this interpreter, the bench
    package importable by them (the ceiling source is pickled by reference)."""
    global _SPARK
    if _SPARK is not None:
        return _SPARK
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:   # e.g. left by another bench: start clean, with our settings
        active.stop()
    builder = (SparkSession.builder.master("local[2]")
               .appName("segmentlog-bench")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "3g"))
    kafka_jars = _spark_kafka_jars()
    if kafka_jars:   # bench/kafka_peer.py's format("kafka"); only a JVM's first session reads it
        builder = builder.config("spark.jars", ",".join(kafka_jars))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import segmentlog_source

    segmentlog_source.register(spark)
    _SPARK = spark
    return spark


def _spark_kafka_jars() -> list[str]:
    """Spark's Kafka connector from the jar cache (`make bench` fetches it first); [] when it
    cannot be had, and then only bench/kafka_peer.py fails, saying so."""
    from segmentlog_source.devtools.kafka import jars

    try:
        return [str(p) for p in jars.jar_paths("spark-kafka")]
    except (jars.JarsUnavailable, OSError) as err:
        print(f"no Spark Kafka connector: {err}", file=sys.stderr)
        return []


def stop_spark() -> None:
    global _SPARK
    if _SPARK is not None:
        _SPARK.stop()
        _SPARK = None


# -- machine ---------------------------------------------------------------------------------

def machine_info() -> dict:
    import platform
    import subprocess
    from importlib.metadata import version

    def first(path: str, key: str) -> str:
        try:
            for line in Path(path).read_text().splitlines():
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "?"

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "?"

    mem_kb = first("/proc/meminfo", "MemTotal").split()[0]
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_1_5_15m": [round(x, 2) for x in os.getloadavg()],
        "cores": os.cpu_count(),
        "cpu": first("/proc/cpuinfo", "model name"),
        "memory_gb": round(int(mem_kb) / 1024**2, 1) if mem_kb.isdigit() else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        **{name: version(name) for name in ("pyspark", "pyarrow", "numpy", "numba")},
        "git_commit": git("rev-parse", "--short", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }
