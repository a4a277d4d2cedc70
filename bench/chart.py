"""The README's benchmark chart: small panels, each answering one question a user asks, in
records/s or seconds with the peers side by side, drawn from a results JSON.

    python -m bench.chart                        # bench/results/latest.json -> latest.png
    python -m bench.chart results.json out.png

`make bench` (bench/run.py) draws it after every full run; this entry point redraws it from
existing results without measuring anything. Panels whose rows a run lacks are left out; the
object-store and Kafka-peer benchmarks, when run on their own, are read from their own JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .common import RESULTS

# One colour per side, the same in every panel.
COLOURS = {"segmentlog": "#1f77b4", "kafka-python": "#ff7f0e", "Spark, Parquet": "#2ca02c",
           "Python-source ceiling": "#9a9a9a", "Spark's Kafka source": "#d62728",
           "100 MB log": "#aec7e8", "2 GB log": "#1f77b4", "full scan, 2 GB": "#9a9a9a",
           "compaction": "#1f77b4", "read + decode, one process": "#9a9a9a"}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_SIDE_NAMES = {"kafka_python": "kafka-python", "parquet": "Spark, Parquet",
               "ceiling": "Python-source ceiling"}


def _side(name: str) -> str:
    if "kafka" in name.lower() and "python" not in name.lower():
        return "Spark's Kafka source"
    return _SIDE_NAMES.get(name, name)


def _by_prefix(cases: list[dict], prefix: str) -> dict[str, dict]:
    return {c["name"][len(prefix):]: c for c in cases if c["name"].startswith(prefix)}


def _codec_rates(external: dict, section: str) -> dict[str, dict[str, float]]:
    """{codec: {side: records/s}} of bench/decoder.py's decode or encode section."""
    out = {}
    for codec, r in ((external.get("decoder") or {}).get(section) or {}).items():
        rates = {_side(k[:-4]): v for k, v in r.items() if k.endswith("_rps")}
        if rates:
            out[codec] = rates
    return dict(sorted(out.items(), key=lambda kv: CODECS.index(kv[0])
                       if kv[0] in CODECS else len(CODECS)))


def panels(results: dict) -> list[dict]:
    """Each panel: title, unit, groups {label: {side: value}}, and `better` ("higher"/"lower");
    `log` for panels whose values span orders of magnitude."""
    cases, external = results.get("cases", []), results.get("external", {})
    out = []
    for section, verb in (("decode", "decode"), ("encode", "encode")):
        rates = _codec_rates(external, section)
        if rates:
            out.append({"title": f"How fast does one core {verb.lower()} records? "
                                 "(records/s by codec)",
                        "unit": "million records/s", "better": "higher", "scale": 1e-6,
                        "groups": rates})
    scans = _by_prefix(cases, "scan: ")
    if scans:
        data = next(iter(scans.values()))["data"].split(", ")
        out.append({"title": f"How long does a Spark query over {data[0]} take? "
                                 f"({data[-1]})",
                    "unit": "seconds", "better": "lower",
                    "groups": {name.replace(" includePayload=false", "\n(includePayload=false)"):
                               {_side(k): v for k, v in c["median"].items()}
                               for name, c in scans.items()}})
    peer = _by_prefix(cases, "Kafka peer: ") or _by_prefix(
        (results.get("kafka_peer") or {}).get("cases", []), "Kafka peer: ")
    if peer:
        data = next(iter(peer.values()))["data"].split(", ")
        out.append({"title": f"Against Spark's own Kafka source and a broker ({data[0]})",
                    "unit": "seconds", "better": "lower",
                    "groups": {name.replace(", ", "\n"):
                               {_side(k): v for k, v in c["median"].items()}
                               for name, c in peer.items()}})
    streams = _by_prefix(cases, "readStream (")
    if streams:
        data = next(iter(streams.values()))["data"].split(", ")
        out.append({"title": f"A tailing stream against a batch read ({data[0]})",
                    "unit": "seconds", "better": "lower",
                    "groups": {name.split(") vs")[0].replace(", ", "\n"):
                               {_side(k): v for k, v in c["median"].items()}
                               for name, c in streams.items()}})
    compaction = [c for c in cases if c["name"].startswith("compaction: ")]
    if any(c["unit"] == "MB/s" for c in compaction):
        out.append(_compaction_panel(compaction))
    writes = {c["name"]: c for c in external.get("writer", {}).get("cases", [])
              if "df.write" in c["name"]}
    if writes:
        c = next(iter(writes.values()))
        out.append({"title": f"How long does df.write of {c['data'].split(' of ')[0]} take?",
                    "unit": "seconds", "better": "lower",
                    "groups": {"df.write": {_side(k): v for k, v in c["median"].items()}}})
    selective = _by_prefix(cases, "selective: ")
    reads = {k: c for k, c in selective.items() if "bytes" in c}
    if reads:
        full = selective.get("full scan reference (count(), includePayload=false)")
        groups = {}
        for name, c in reads.items():
            groups[name] = {"100 MB log": c["median"]["100 MB"], "2 GB log": c["median"]["2 GB"]}
            if full:
                groups[name]["full scan, 2 GB"] = full["median"]["2 GB"]
        out.append({"title": "Does a 0.1% read get slower as the log grows?",
                    "unit": "seconds", "better": "lower", "groups": groups})
        stored = [c for c in cases if c["name"].startswith("object store: ")]
        stored += (results.get("object_store") or {}).get("cases", []) if not stored else []
        out.append(_bytes_panel(reads, stored))
    return out


def _compaction_panel(rows: list[dict]) -> dict:
    """bench/compaction.py: the cleaner's MB/s each way, beside reading and decoding the same
    bytes (the least a cleaner must do); the one-process peak RSS in the title."""
    rates = {side: v for c in rows if c["unit"] == "MB/s" for side, v in c["median"].items()}
    passes = next((c["passes"] for c in rows if "passes" in c), "?")
    reference = rates.get("read + CRC + decode")
    small = next((s for s in rates if s.endswith(" dedupe buffer")), "")
    groups = {}
    for label, side in (("one process\n128 MiB dedupe buffer", "cleaner, one process"),
                        ("Spark job, local[2]\n(4 partitions)", "Spark job, local[2]"),
                        (f"one process, {small.split(' dedupe')[0]} buffer\n({passes} passes, "
                         "partition 0)", small)):
        if side in rates:
            groups[label] = {"compaction": rates[side]}
            if reference:
                groups[label]["read + decode, one process"] = reference
    peak = next((c["median"].get("cleaner, one process") for c in rows if c["unit"] == "MB"),
                None)
    data = next(c["data"] for c in rows if c["unit"] == "MB/s").split(", ")
    return {"title": f"How fast does compaction go? ({data[-1].replace(' of .log', '')}, "
                     f"{data[-2]}" + (f"; peak RSS {peak:.0f} MB)" if peak else ")"),
            "unit": "MB/s", "better": "higher", "groups": groups, "headroom": 0.35}


def _bytes_panel(reads: dict, object_store: list[dict]) -> dict:
    """Bytes a selective read reads against the size of the log: log-scale bars."""
    groups = {}
    for name, c in reads.items():
        b = c["bytes"]["2 GB"]
        log_bytes = _log_bytes(c["data"])
        groups[f"{_short(name)}\nlocal, 2 GB"] = {"log size": log_bytes,
                                                "bytes read": b["executor_read"]
                                                + b["planner_read"]}
    for c in object_store:
        if "object_bytes" in c and "log_bytes" in c:
            name = c["name"].removeprefix("object store: ")
            groups[f"{_short(name)}\nS3, 1 GB"] = {"log size": c["log_bytes"],
                                                 "bytes read": c["object_bytes"]}
    return {"title": "How many bytes does a 0.1% read read? (log scale)",
            "unit": "bytes", "better": "lower", "log": True, "groups": groups}


def _short(name: str) -> str:
    return name.replace(" 0.1%", "").replace("lookup offset = x", "offset = x")


def _log_bytes(data: str) -> int:
    """The .log bytes of the 2 GB log, from a case's data text ('..., 2,148 MB of .log; ...')."""
    part = next(p for p in data.split(";") if p.strip().startswith("2 GB"))
    megabytes = part.rsplit(" MB of .log", 1)[0].rsplit(", ", 1)[1].replace(",", "")
    return int(megabytes) * 10**6


def _label(value: float, unit: str) -> str:
    if unit == "bytes":
        for size, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
            if value >= size:
                return f"{value / size:.3g} {name}"
        return f"{value:.0f} B"
    return f"{value:.3g}"


def draw(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = panels(results)
    if not drawn:       # a partial run (one bench) may fill no panel
        return
    columns = 2
    rows = -(-len(drawn) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(13, 3.9 * rows), squeeze=False)
    colours = {**COLOURS, "log size": "#c7c7c7", "bytes read": "#1f77b4"}
    for ax, panel in zip(axes.flat, drawn):
        scale = panel.get("scale", 1)
        sides = sorted(dict.fromkeys(s for g in panel["groups"].values() for s in g),
                       key=lambda side: side != "segmentlog")   # segmentlog first, always
        width = 0.8 / len(sides)
        for g, (group, values) in enumerate(panel["groups"].items()):
            for i, side in enumerate(sides):
                if side not in values:
                    continue
                value = values[side] * scale
                x = g + (i - (len(sides) - 1) / 2) * width
                ax.bar(x, value, width * 0.92, color=colours.get(side, f"C{i}"),
                       label=side if g == 0 or side not in values else None)
                ax.text(x, value, _label(value, panel["unit"]), ha="center", va="bottom",
                        fontsize=7)
        if panel.get("log"):
            ax.set_yscale("log")
        ax.margins(y=panel.get("headroom", 0.18))   # more: room for the legend above bars
        ax.set_xticks(range(len(panel["groups"])), list(panel["groups"]), fontsize=7.5)
        ax.set_ylabel(f"{panel['unit']} ({panel['better']} is better)", fontsize=8)
        ax.set_title(panel["title"], fontsize=9.5)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        ax.legend(unique.values(), unique.keys(), fontsize=7, frameon=False)
        ax.tick_params(axis="y", labelsize=7)
        ax.spines[["top", "right"]].set_visible(False)
    for ax in list(axes.flat)[len(drawn):]:
        ax.set_visible(False)
    machine = results.get("machine", {})
    fig.suptitle(f"segmentlog benchmarks, {machine.get('date', '')[:10]}, "
                 f"{machine.get('cores', '?')} cores (medians; the full table is below the "
                 "chart)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else RESULTS / "latest.json"
    target = Path(argv[1]) if len(argv) > 1 else source.with_suffix(".png")
    results = json.loads(source.read_text())
    for name in ("object_store", "kafka_peer"):   # benchmarks run on their own
        separate = RESULTS / f"{name}.json"
        if name not in results and separate.exists():
            results[name] = json.loads(separate.read_text())
    draw(results, target)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
