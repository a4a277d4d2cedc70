"""`make fuzz`: the large mutation fuzz run, with progress and a Markdown report.

    python -m tests.fuzz.run --mutants 20000 --workers 2 --report bench/results/fuzz.md
    python -m tests.fuzz.run --replay 'gen-gzip v2.baseOffset 1234567'    # one mutant, verbose

Exits 1 when any mutant breaks the rule (silently wrong, bad error, lossy read raising, hang,
memory), after writing the report.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import time

from tests.fuzz.mutations import MutantSpec, generate_specs
from tests.fuzz.oracle import failed, run_mutant
from tests.fuzz.originals import build_originals
from tests.fuzz.pool import TIME_LIMIT, WorkerPool
from tests.fuzz.report import write_report

REPO = Path(__file__).resolve().parents[2]


def _commit() -> str:
    """Which code was fuzzed: the repository's commit (and whether segmentlog_source differs
    from it), or the directory segmentlog_source was imported from when it is not this
    repository's (an exported older commit, say)."""
    import segmentlog_source

    source = Path(segmentlog_source.__file__).resolve().parent.parent
    if source != REPO:
        return f"segmentlog_source imported from {source}"
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "segmentlog_source"], cwd=REPO,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out + (" (segmentlog_source modified)" if dirty else "")
    except OSError:
        return "?"


def replay(text: str, originals_root: str) -> int:
    original, operator, seed = text.split()
    originals = build_originals(originals_root)
    logging.basicConfig(level=logging.WARNING)
    result = run_mutant(MutantSpec(original, operator, int(seed)), originals,
                        Path(originals_root) / "replay")
    print(result.get("mutation") or result.get("skipped"))
    for tool, verdict in result.get("tools", {}).items():
        print(f"  {tool:18s} {json.dumps(verdict)[:900]}")
    print("outcome:", result.get("outcome"))
    return 1 if failed(result) else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutants", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT)
    parser.add_argument("--report", default="bench/results/fuzz.md")
    parser.add_argument("--results", help="also write every verdict as JSON lines here")
    parser.add_argument("--originals", help="where to build (or reuse) the originals "
                        "(default: a fresh temporary directory)")
    parser.add_argument("--replay", metavar="'ORIGINAL OPERATOR SEED'",
                        help="run one mutant in this process and print every verdict")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="segmentlog-fuzz-") as tmp:
        root = args.originals or os.path.join(tmp, "originals")
        if args.replay:
            return replay(args.replay, root)
        started = time.monotonic()
        originals = build_originals(root)
        print(f"fuzz: {len(originals)} originals built in {time.monotonic() - started:.1f} s "
              f"under {root}", flush=True)
        specs = generate_specs(originals, args.mutants, args.seed)
        counts: dict[str, int] = {}
        last = [time.monotonic()]
        run_started = time.monotonic()

        def progress(result, done, total):
            outcome = result.get("outcome", "skipped" if "skipped" in result else "?")
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome in ("HANG", "MEMORY", "HARNESS ERROR"):
                print(f"  {outcome}: {result['spec']} {result.get('mutation') or ''} "
                      f"{result.get('tools', {}).get('watchdog', {}).get('stage', '')}",
                      flush=True)
            elif failed(result):   # say which mutant at once: --replay takes this line's spec
                print(f"  {outcome}: {result['spec']} ({', '.join(failed(result))})", flush=True)
            now = time.monotonic()
            if now - last[0] >= 10 or done == total:
                last[0] = now
                rate = done / max(now - run_started, 1e-9)
                summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                print(f"fuzz: {done}/{total} ({rate:.1f}/s, ~{(total - done) / max(rate, 1e-9):.0f}"
                      f" s left): {summary}", flush=True)

        with WorkerPool(root, args.workers, args.time_limit,
                        work_root=os.path.join(tmp, "mutants")) as pool:
            results = pool.run(specs, progress)
            restarts = pool.restarts
        seconds = time.monotonic() - run_started
        if args.results:
            with open(args.results, "w") as f:
                for r in results:
                    f.write(json.dumps({**r, "spec": str(r["spec"])}, default=str) + "\n")
        families = {}
        for o in originals.values():
            families[o.family] = families.get(o.family, 0) + 1
        meta = dict(mutants=len(specs), seed=args.seed, workers=args.workers,
                    time_limit=args.time_limit, seconds=seconds, restarts=restarts,
                    commit=_commit(), cpus=os.cpu_count(),
                    originals=f"{len(originals)} ("
                              + ", ".join(f"{n} {f}" for f, n in sorted(families.items())) + ")")
        os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
        write_report(args.report, results, meta)
        bad = [r for r in results if failed(r) or r.get("outcome") == "HARNESS ERROR"]
        print(f"fuzz: {len(results)} mutants in {seconds:.0f} s; {len(bad)} break the rule; "
              f"report: {args.report}", flush=True)
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
