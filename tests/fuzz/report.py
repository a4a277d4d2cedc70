"""The fuzz run's report: outcome tables and reproducible examples of every failure class."""

from __future__ import annotations

from collections import Counter, defaultdict
import platform

from tests.fuzz.mutations import OPERATORS
from tests.fuzz.oracle import FAILURES

COLUMNS = ["exact rows", "no effect", "clear error", "torn-tail prefix", "undetectable",
           "SILENTLY WRONG",
           "BAD ERROR", "LOSSY RAISED", "HANG", "MEMORY", "HARNESS ERROR"]
EXAMPLES_PER_CLASS = 3


def failure_classes(results: list[dict]) -> dict[tuple[str, str, str], list[dict]]:
    """(tool, outcome, operator) -> results, for every tool verdict that breaks the rule."""
    classes = defaultdict(list)
    for r in results:
        for tool, verdict in r.get("tools", {}).items():
            if verdict["outcome"] in FAILURES:
                classes[(tool, verdict["outcome"], r["spec"].operator)].append(r)
        if r.get("outcome") == "HARNESS ERROR":
            classes[("harness", "HARNESS ERROR", r["spec"].operator)].append(r)
    return classes


def _verdict_text(verdict: dict) -> str:
    bits = []
    if verdict.get("type"):
        bits.append(f"{verdict['type']}: {verdict.get('message', '')}")
    for key in ("why", "detail", "stage", "frame", "phase"):
        if verdict.get(key):
            bits.append(f"{key}: {verdict[key]}")
    return " — ".join(bits).replace("|", "\\|").replace("\n", " ")[:700]


def _md_table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def write_report(path: str, results: list[dict], meta: dict) -> str:
    done = [r for r in results if "skipped" not in r]
    overall = Counter(r["outcome"] for r in done)
    lines = [f"# Mutation fuzz run ({meta['mutants']} mutants)", ""]
    lines += [
        "Written by `make fuzz` (`python -m tests.fuzz.run`). The rule under test (issue #16): "
        "for every mutant of a valid log, the reader, `segmentlog verify` and `segmentlog dump` "
        "either return exactly what the log holds or fail with a clear error naming the file, "
        "within a time and memory limit; failOnDataLoss=false may return less, but only rows "
        "the log holds, and says what it skipped. See tests/fuzz/oracle.py for the verdicts.", ""]
    failures = sum(overall[c] for c in ("SILENTLY WRONG", "BAD ERROR", "LOSSY RAISED", "HANG",
                                        "MEMORY", "HARNESS ERROR"))
    lines += _md_table(["", ""], [
        ["commit", meta.get("commit", "?")],
        ["seed", meta["seed"]],
        ["mutants run", f"{len(done)} ({len(results) - len(done)} not applicable)"],
        ["originals", meta["originals"]],
        ["workers / time limit", f"{meta['workers']} / {meta['time_limit']:.0f} s per mutant, "
                                 "all tools together"],
        ["wall time", f"{meta['seconds']:.0f} s ({len(done) / max(meta['seconds'], 1e-9):.1f} "
                      "mutants/s)"],
        ["machine", f"{platform.machine()}, {meta.get('cpus', '?')} CPUs, Python "
                    f"{platform.python_version()}"],
        ["worker restarts", meta.get("restarts", 0)],
        ["largest RSS growth of one mutant",
         f"{max((r.get('rss_growth', 0) for r in done), default=0) / 2**20:.0f} MiB"],
        ["mutants over 1 GiB RSS growth",
         sum(1 for r in done if r.get("rss_growth", 0) > 2**30)],
        ["clear errors whose message gives no byte, offset, entry or line",
         sum(1 for r in done for v in r.get("tools", {}).values()
             if v["outcome"] in ("clear-error", "RAISED") and not v.get("has_position"))],
        ["**SILENTLY WRONG**", overall["SILENTLY WRONG"]],
        ["**HANG**", overall["HANG"]],
        ["**mutants breaking the rule**", failures],
    ])
    lines += ["", "## Outcomes", "",
              "One outcome per mutant, the worst of its tools: HANG / MEMORY, BAD ERROR (an "
              "exception that is not a SegmentLogError naming a file), SILENTLY WRONG (rows "
              "other than the log's with no error, or verify passing such a log), LOSSY RAISED "
              "(failOnDataLoss=false raised instead of returning what is readable); otherwise "
              "clear error (the full read failed cleanly), torn-tail prefix, exact rows (every "
              "read returned R0 and verify reported the damage) or no effect (every read "
              "returned R0 and verify passed). undetectable: rows differ, but the mutant is "
              "itself a valid log (checked with kafka-python and Kafka's framing rules), read "
              "right, and no other file of its partition directory records the original "
              "offsets, so no reader could know (tests/fuzz/consistency.py); not counted as a "
              "failure.", ""]
    lines += _md_table(["outcome", "mutants", "%"], [
        [c, overall[c], f"{100 * overall[c] / max(len(done), 1):.1f}"] for c in COLUMNS
        if overall[c]])
    lines += ["", f"{sum(1 for r in done if r.get('identity'))} mutants left the bytes as they "
                  "were (a value set to itself); they are counted like the others.", ""]
    lines += ["## By operator", ""]
    by_op = defaultdict(Counter)
    for r in done:
        by_op[r["spec"].operator][r["outcome"]] += 1
    cols = [c for c in COLUMNS if overall[c]]
    rows = []
    for name in OPERATORS:
        if by_op[name]:
            rows.append([f"`{name}`", OPERATORS[name].group, sum(by_op[name].values())]
                        + [by_op[name][c] or "" for c in cols])
    lines += _md_table(["operator", "group", "mutants"] + cols, rows)
    lines += ["", "## By tool", "",
              "Each reader variant is one read of the mutant: `full` (the defaults), `lossy` "
              "(failOnDataLoss=false), `range` (startingOffsets/endingOffsets), `time` "
              "(startingTimestamp/endingTimestamp), `split` (minPartitions=9: cut at index "
              "positions), `committed` (read_committed; logs with transactions only).", ""]
    by_tool = defaultdict(Counter)
    for r in done:
        for tool, verdict in r.get("tools", {}).items():
            by_tool[tool][verdict["outcome"]] += 1
    outcomes = sorted({o for c in by_tool.values() for o in c})
    lines += _md_table(["tool"] + outcomes, [
        [f"`{t}`"] + [by_tool[t][o] or "" for o in outcomes] for t in sorted(by_tool)])
    classes = failure_classes(done)
    lines += ["", "## Failures", ""]
    if not classes:
        lines += ["None."]
    else:
        lines += ["Per tool, verdict and operator; each example is reproducible with "
                  "`python -m tests.fuzz.run --replay 'ORIGINAL OPERATOR SEED'`.", ""]
        lines += _md_table(["tool", "verdict", "operator", "mutants"], [
            [f"`{t}`", o, f"`{op}`", len(rs)] for (t, o, op), rs in
            sorted(classes.items(), key=lambda kv: (-len(kv[1]), kv[0]))])
        lines += [""]
        for (tool, outcome, op), rs in sorted(classes.items(), key=lambda kv: kv[0]):
            lines += [f"### `{tool}` {outcome}, `{op}` ({len(rs)})", ""]
            for r in rs[:EXAMPLES_PER_CLASS]:
                spec = r["spec"]
                verdict = r.get("tools", {}).get(tool, {})
                text = _verdict_text(verdict) if verdict else r.get("harness_error", "")[-400:]
                lines += [f"- `{spec.original} {spec.operator} {spec.seed}`: "
                          f"{(r.get('mutation') or '').split(': ', 1)[-1]}",
                          f"  - {text}"]
            lines += [""]
    text = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return text
