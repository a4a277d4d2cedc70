"""`make bench`: every benchmark, one table of ratios, written to bench/results/.

    python -m bench.run                 # all of them: ~8 min on 2 cores (+1.5 min the first
                                        # time, to generate ~3 GB of logs into bench/data)
    python -m bench.run spark_scan ...  # only these (written as partial.* instead of latest.*)

Writes bench/results/latest.json (machine, every raw measurement, medians, ratios, targets),
latest.md (the table, for the README) and latest.png (bench/chart.py: small panels, each one
question with the peers side by side), and prints the table. Modules, in order:
    decoder     bench/decoder.py: record decode/encode vs kafka-python (its own run())
    writer      bench/writer.py: write throughput (its own run())
    memory      bench/memory.py: peak RSS of a 1 GiB segment scan and of 1 GiB writes
    spark_scan  bench/spark_scan.py: full scans vs the ceiling and Parquet
    selective   bench/selective.py: ranges and lookups, 100 MB vs 2 GB, bytes read
    scale       bench/scale.py: full scans' s/GB and a 0.1% time range on 0.5, 2 and 8 GB logs
                (~6 min; the logs generated once into ~/.cache/segmentlog/bench, ~2 min)
    object_store bench/object_store.py: the same queries on 1 GB in S3 (moto), bytes served
    kafka_peer  bench/kafka_peer.py: Spark's Kafka source and sink through a real broker
                (5M records produced once, ~2 min) against segmentlog on its log directory
    stream      bench/stream.py: readStream's throughput vs the batch reader, and the latency
                from an append to the record being visible in a segmentlog sink
    compaction  bench/compaction.py: the log cleaner's MB/s on a 1 GB compacted topic, in one
                process and as a Spark job, beside plain reads; its peak RSS and passes
    value_decoding  bench/value_decoding.py: valueFormat=confluent-avro's records/s per core
                against fastavro alone on the same payloads, in one process and in Spark (~2.5 min)
    views       bench/views.py: view=batches' records per partition and per hour against
                Parquet's same answers, bytes read, requests served from S3 (~3 min)
    planner_scale  bench/planner_scale.py: plan_read on ~21,000 tiny segments (200 partitions, a
                year of timestamps), a full scan and a 0.1% time range, locally and on moto S3:
                seconds, peak RSS, requests (~15 min to upload the tree, then minutes per plan)
decoder and writer are optional: missing or failing, they get a "not available" row.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback

from .chart import draw
from .common import RESULTS, case, machine_info, stop_spark, unavailable

OURS = ("memory", "spark_scan", "selective", "scale", "object_store", "kafka_peer", "stream",
        "compaction", "value_decoding", "views", "planner_scale")
EXTERNAL = ("decoder", "writer")
ORDER = ("decoder", "writer", "memory", "spark_scan", "selective", "scale", "object_store",
         "kafka_peer", "stream", "compaction", "value_decoding", "views", "planner_scale")


def external_rows(label: str, result) -> list[dict]:
    """Rows from another module's run() dict: its own case rows if it returns them
    (`{"cases": [...]}`), else one row per {name: {..., "ratio": x}} entry it reports."""
    if isinstance(result, dict) and isinstance(result.get("cases"), list):
        return result["cases"]
    rows = []
    sections = result.items() if isinstance(result, dict) else ()
    for section, entries in sections:
        if not isinstance(entries, dict):
            continue
        for name, r in entries.items():
            if not isinstance(r, dict):
                continue
            # seconds per side ("<side>_s"): ratios as everywhere else, segmentlog / other
            seconds = {k[:-2]: v for k, v in r.items()
                       if k.endswith("_s") and "best" not in k and isinstance(v, (int, float))}
            ratios = ({f"segmentlog / {side}": seconds["segmentlog"] / v
                       for side, v in seconds.items() if side != "segmentlog" and v}
                      if "segmentlog" in seconds else
                      {k: v for k, v in r.items() if "ratio" in k and isinstance(v, (int, float))})
            if ratios:
                rows.append(case(f"{label}: {section} {name}", data=_data_of(result),
                                 repetitions=result.get("repetitions", 0),
                                 raw={side: [v] for side, v in seconds.items()}, ratios=ratios,
                                 notes=f"medians as reported by bench/{label}.py"))
    return rows or [unavailable(label, "ran, but reported no ratios (its result is in the JSON)")]


def _data_of(result: dict) -> str:
    keys = ("records", "value_bytes", "batch_bytes", "bytes")
    return ", ".join(f"{k} {result[k]:,}" for k in keys if isinstance(result.get(k), int))


def run_module(name: str) -> tuple[list[dict], object, bool]:
    """(rows, raw result of an external module, failed)."""
    try:
        module = importlib.import_module(f"bench.{name}")
    except ModuleNotFoundError as err:
        if name in EXTERNAL and err.name == f"bench.{name}":
            return [unavailable(name, f"bench/{name}.py does not exist yet")], None, False
        traceback.print_exc()
        return [unavailable(name, f"import failed: {err}")], None, name in OURS
    try:
        result = module.run()
    except Exception as err:  # noqa: BLE001 - one broken benchmark must not lose the others
        traceback.print_exc()
        return [unavailable(name, f"{type(err).__name__}: {err}")], None, name in OURS
    if name in EXTERNAL:
        return external_rows(name, result), result, False
    return result, None, False


# -- output ----------------------------------------------------------------------------------

def _num(value: float, unit: str = "") -> str:
    text = f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{text} {unit}".strip()


def write_alone(stem: str, rows: list[dict], total: float, *, phrases: dict | None = None,
                after: str = "") -> None:
    """bench/results/<stem>.json and .md of one bench run alone (`python -m bench.<stem>`);
    `phrases`: words of the table's header to change, `after`: text that follows the table."""
    machine = machine_info()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(
        {"machine": machine, "total_seconds": round(total, 1), "cases": rows}, indent=1,
        default=str))
    table = markdown(rows, machine, total).replace("`make bench` took",
                                                   f"`python -m bench.{stem}` took")
    for old, new in (phrases or {}).items():
        table = table.replace(old, new)
    table += after
    (RESULTS / f"{stem}.md").write_text(table)
    print(table)


def markdown(rows: list[dict], machine: dict, total_s: float) -> str:
    header = (f"Measured {machine['date']} on {machine['cores']} cores ({machine['cpu']}), "
              f"{machine['memory_gb']} GB, Python {machine['python']}, PySpark "
              f"{machine['pyspark']}, pyarrow {machine['pyarrow']}, numpy {machine['numpy']}; "
              f"git {machine['git_commit']}{' (dirty)' if machine['git_dirty'] else ''}; "
              f"load average {'/'.join(map(str, machine['load_average_1_5_15m']))} at the end; "
              f"`make bench` took {total_s / 60:.1f} min. Medians of the repetitions; a timing "
              "ratio is the median of the per-repetition ratios of sides run back to back.")
    lines = [header, "", "| case | data | reps | median | ratios | target | met |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        med = " · ".join(f"{side} {_num(v, r['unit'])}" for side, v in r["median"].items())
        targeted = {t["ratio"] for t in r["targets"]}
        ratios = " · ".join(f"{name} **{v:.3g}**" if name in targeted else f"{name} {v:.3g}"
                            for name, v in r["ratios"].items())
        target = " · ".join(f"{t['ratio']} ≤ {t['max']:g}" for t in r["targets"]) or "—"
        met = {True: "yes", False: "**no**", None: "—"}[r["met"]]
        notes = f" ({r['notes']})" if r.get("notes") else ""
        lines.append(f"| {r['name']}{notes} | {r['data']} | {r['repetitions']} | {med} | "
                     f"{ratios or '—'} | {target} | {met} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    names = argv or list(ORDER)
    unknown = set(names) - set(ORDER)
    if unknown:
        print(f"unknown benchmark(s): {', '.join(sorted(unknown))}; known: {', '.join(ORDER)}")
        return 2
    start = time.perf_counter()
    rows, external, failed, seconds = [], {}, [], {}
    for name in names:
        print(f"== {name}", file=sys.stderr, flush=True)
        t = time.perf_counter()
        got, raw, broke = run_module(name)
        rows.extend(got)
        if raw is not None:
            external[name] = raw
        if broke:
            failed.append(name)
        seconds[name] = round(time.perf_counter() - t, 1)
        print(f"   {name}: {seconds[name]:.0f} s", file=sys.stderr, flush=True)
    stop_spark()
    total = time.perf_counter() - start
    machine = machine_info()
    stem = "latest" if names == list(ORDER) else "partial"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(
        {"machine": machine, "total_seconds": round(total, 1), "module_seconds": seconds,
         "cases": rows, "external": external}, indent=1, default=str))
    table = markdown(rows, machine, total)
    table += "\nSeconds per module: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items())
    table += ".\n"
    (RESULTS / f"{stem}.md").write_text(table)
    draw({"machine": machine, "cases": rows, "external": external}, RESULTS / f"{stem}.png")
    print(table)
    print(f"wrote {RESULTS}/{stem}.json, {stem}.md, {stem}.png in {total / 60:.1f} min")
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
