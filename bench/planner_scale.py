"""Planning scales with the segments a read touches, not with the bytes or age of the log.

Data (generated once into ~/.cache/segmentlog/bench, or $SEGMENTLOG_BENCH_CACHE, by segmentlog's
own generator, so segments, indexes, time indexes and producer snapshots are what a broker
writes): topic `events`, 200 partitions, 4,800,000 records of 20-byte values and null keys
(round-robin, 10 per batch), timestamps spread evenly over a year, segments of 8 KiB: 105 per
partition, 21,000 in all (84,800 files, 167 MB of `.log`). The same tree is copied to an
S3-compatible server on loopback (moto, segmentlog_source/devtools/s3_server.py) once per run:
~15 min, and moto takes ~40 s to list it; by default only 20 of its partitions (below).

Each plan runs in a fresh interpreter, so its peak RSS is its own; the RSS of an interpreter
that only imports the planner is subtracted. Measured per plan: wall seconds of `plan_read`,
peak RSS above that baseline, groups planned, what the planner says it read (bytes and
requests), and on S3 every request the server saw. Three plans of each, locally and on S3.
* full scan: no options (every partition, earliest to latest);
* time range 0.1%: startingTimestamp/endingTimestamp over 0.1% of the year, from 30% of it.
Targets: a full scan planned in <= 60 s and <= 1000 MB above the baseline; the 0.1% time range
in <= 5 s locally (21,000 segments) and <= 2 s on S3 (2,100 segments, its requests reported).

SEGMENTLOG_BENCH_PLANNER_BEFORE=<a source tree> (e.g. `git archive <commit> | tar -x -C DIR`)
plans the S3 side with that tree's planner too, against the same server and upload, one
before the other for each query: rows "S3, before" beside "S3".
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import CACHE, MB, REPO, case, dataset, upload

YEAR_MS = 365 * 24 * 3600 * 1000
START = 1_700_000_000_000
RECORDS = 4_800_000
PARAMS = dict(topics=["events"], partitions=200, records=RECORDS, codec="none", key_size=0,
              value_size=20, records_per_batch=10, segment_bytes=8192, seed=3,
              start_timestamp=START, timestamp_step_ms=YEAR_MS // RECORDS)
REPETITIONS = 3       # locally and on S3 (a full scan plan of 2,100 S3 segments: ~20 s on moto)
# moto serves ~35-240 requests/s: the whole tree on S3 takes ~40 min (a 15 min upload, then
# 4 and 17 min of plans), so `make bench` plans 20 partitions there (2,100 segments);
# SEGMENTLOG_BENCH_PLANNER_S3_PARTITIONS=200 measures the whole tree.
S3_PARTITIONS = int(os.environ.get("SEGMENTLOG_BENCH_PLANNER_S3_PARTITIONS", "20"))
BEFORE = os.environ.get("SEGMENTLOG_BENCH_PLANNER_BEFORE")   # another source tree, planned too
FULL_SECONDS, FULL_MB = 60.0, 1000.0
RANGE_SECONDS, S3_RANGE_SECONDS = 5.0, 2.0   # 21,000 local segments; 2,100 on S3 (issue #37)


def tree() -> Path:
    """The generated data directory, made once per parameter set."""
    return dataset("planner_scale", root=CACHE, **PARAMS)


def time_range() -> dict[str, str]:
    """startingTimestamp/endingTimestamp over 0.1% of the year, from 30% of it."""
    lo = START + 3 * YEAR_MS // 10
    return {"startingTimestamp": str(lo), "endingTimestamp": str(lo + YEAR_MS // 1000)}


QUERIES = {"full scan": {}, "time range 0.1%": time_range()}


# -- one plan, in a fresh interpreter ------------------------------------------------------------

def _child(spec: dict) -> dict:
    """Run in the child: import the planner, then (unless a baseline) plan once."""
    import importlib

    from segmentlog_source.plan.options import parse_read_options
    from segmentlog_source.plan.read_plan import plan_read

    importlib.import_module("pyarrow.fs")   # the baseline imports what an S3 plan imports

    out = {}
    if spec.get("options") is not None:
        opts = parse_read_options(spec["options"])
        started = time.perf_counter()
        plan = plan_read(opts)
        out = {"seconds": time.perf_counter() - started, "groups": len(plan.groups),
               "tasks": sum(len(g.tasks) for g in plan.groups), "planned_bytes": plan.nbytes,
               "planner_bytes": plan.planner_io.bytes_read,
               "planner_requests": plan.planner_io.read_requests}
    out["max_rss_mb"] = _peak_rss_kb() * 1024 / MB
    return out


def _peak_rss_kb() -> int:
    """This process's peak RSS since its exec (VmHWM). Not getrusage's ru_maxrss: on Linux a
    child keeps its parent's high-water mark across fork and exec, so a child of `make bench`
    (a Spark driver, ~900 MB) reported that, whatever it planned."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_child(options: dict | None, source: Path = REPO) -> dict:
    """One plan in a fresh interpreter, with the planner (and this module's child) of the
    source tree `source`: this repository's unless a "before" tree is compared."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(source)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    done = subprocess.run([sys.executable, "-m", "bench.planner_scale", "--child",
                           json.dumps({"options": options})], cwd=source, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"planning child failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(side: str, path: str, extra: dict, repetitions: int, s3=None,
            sources: dict[str, Path] | None = None) -> dict[str, dict]:
    """{side: {query: {runs: [child results], baseline_mb, s3_requests}}} for one copy of the
    tree, planned by each source tree of `sources` ({side: tree}; default this one), the
    trees taking turns for each query."""
    sources = sources or {side: REPO}
    baselines = {s: statistics.median(run_child(None, tree)["max_rss_mb"] for _ in range(2))
                 for s, tree in sources.items()}
    out: dict[str, dict] = {s: {} for s in sources}
    for name, query in QUERIES.items():
        for _ in range(repetitions):
            for s, tree in sources.items():
                if s3 is not None:
                    s3.reset_counts()
                result = run_child({"path": path, **query, **extra}, tree)
                m = out[s].setdefault(name, {"runs": [], "baseline_mb": baselines[s],
                                             "s3_requests": []})
                m["runs"].append(result)
                if s3 is not None:
                    m["s3_requests"].append(len(s3.requests()))
        for s in sources:
            runs = out[s][name]["runs"]
            print(f"   {s} {name}: {statistics.median(r['seconds'] for r in runs):.2f} s, "
                  f"{max(r['max_rss_mb'] for r in runs) - baselines[s]:.0f} MB, "
                  f"{runs[0]['planner_requests']} requests", file=sys.stderr, flush=True)
    return out


def rows_of(side: str, measured: dict, data: str) -> list[dict]:
    rows = []
    for name, m in measured.items():
        runs = m["runs"]
        seconds = [r["seconds"] for r in runs]
        rss = max(r["max_rss_mb"] for r in runs) - m["baseline_mb"]
        first = runs[0]
        limit = (FULL_SECONDS if name == "full scan"
                 else S3_RANGE_SECONDS if side.startswith("S3") else RANGE_SECONDS)
        ratios = {f"plan s / {limit:g} s": statistics.median(seconds) / limit,
                  f"RSS MB / {FULL_MB:g} MB": rss / FULL_MB}
        targets = [(f"plan s / {limit:g} s", 1.0)]
        if name == "full scan":
            targets.append((f"RSS MB / {FULL_MB:g} MB", 1.0))
        served = (f", {statistics.median(m['s3_requests']):,.0f} requests at the server"
                  if m["s3_requests"] else "")
        rows.append(case(
            f"planner scale: {name} ({side})", data=data, repetitions=len(runs),
            raw={"plan": seconds}, ratios=ratios, targets=targets,
            notes=(f"{rss:,.0f} MB RSS above an importing interpreter's "
                   f"{m['baseline_mb']:,.0f} MB; {first['groups']:,} groups of "
                   f"{first['tasks']:,} tasks; planner read {first['planner_bytes'] / 1000:,.0f}"
                   f" KB in {first['planner_requests']:,} requests{served}"),
            rss_mb=rss, groups=first["groups"], tasks=first["tasks"],
            planner_bytes=first["planner_bytes"], planner_requests=first["planner_requests"],
            server_requests=m["s3_requests"]))
    return rows


def run(repetitions: int = REPETITIONS) -> list[dict]:
    from segmentlog_source.devtools.s3_server import S3Server

    path = tree()
    info = json.loads((path.parent / f"{path.name}.json").read_text())
    data = (f"{info['records']:,} records, 200 partitions, {info['segments']:,} segments of "
            f"8 KiB, {info['log_bytes'] / MB:,.0f} MB of .log, a year of timestamps")
    rows = rows_of("local", measure("local", str(path), {}, repetitions)["local"], data)
    partitions = S3_PARTITIONS
    with S3Server() as s3, tempfile.TemporaryDirectory(dir=CACHE) as subset:
        if partitions < PARAMS["partitions"]:     # hard links: no copy of the bytes
            for entry in path.iterdir():
                number = entry.name.rsplit("-", 1)[-1]
                keep = not (entry.is_dir() and number.isdigit()) or int(number) < partitions
                if keep and entry.is_dir():
                    shutil.copytree(entry, Path(subset) / entry.name, copy_function=os.link)
                elif keep:
                    os.link(entry, Path(subset) / entry.name)
        uri, upload_s = upload(s3, Path(subset) if partitions < PARAMS["partitions"] else path,
                               "log")
        print(f"   uploaded in {upload_s:.0f} s", file=sys.stderr, flush=True)
        segments = info["segments"] * partitions // PARAMS["partitions"]
        sources = {"S3": REPO} if not BEFORE else {"S3, before": Path(BEFORE), "S3": REPO}
        measured = measure("S3", uri, s3.storage_options, repetitions, s3, sources)
        for side in sources:
            rows += rows_of(side, measured[side],
                            data + f"; on moto S3 (loopback; upload took {upload_s:.0f} s): "
                            f"{partitions} of the partitions, {segments:,} segments")
    return rows


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_child(json.loads(sys.argv[2]))))
    else:
        print(json.dumps(run(), indent=1, default=str))
