"""Running the reader, `verify` and `dump` on a mutant, and judging what they did.

The oracle is the unmutated log's rows R0 (originals.py), never a decoder of the mutated bytes:
such a decoder reads a moved offset as it is. Per mutant and tool:

reader (failOnDataLoss=true; every read variant of the original: full, offset range, time
range, split at index positions, read_committed)
    exact        rows == R0
    clear-error  a SegmentLogError whose message names a file or directory of the log
    torn-prefix  rows are R0 but for whole batches at the end of the partition the mutation
                 touched, the lost batches in its last segment and the mutation at or after the
                 end of the last batch returned (a torn tail, which recovery truncates)
    SILENT       anything else: rows that R0 does not have, or lacks, with no error
    BAD-ERROR    any other exception, or an error that names no file
lossy (failOnDataLoss=false)
    exact / partial (every row returned is R0's row at that offset, none twice, and a loss was
    logged) / SILENT (an altered, invented or duplicated row, or a loss nobody logged) /
    RAISED (an error about something other than the whole input) / BAD-ERROR
verify
    passed (no error, and every read returned R0) / errors (it reported errors, each naming a
    file of the log) / clear-error / SILENT (it passed, but a read did not return R0) /
    BAD-ERROR (an exception that is no SegmentLogError naming a file, or a problem naming none)
dump (every file; deep iteration with data; --verify-index-only and --index-sanity-check on
indexes)
    ok / clear-error / BAD-ERROR

UNDETECTABLE replaces SILENT where the mutant is itself a valid log and every other file of the
partition agrees with it (consistency.py): no reader could know.

HANG (over the time limit) and MEMORY (over the memory limit) are decided by the pool
(pool.py), which runs mutants in worker processes it can kill.
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
import re
import shutil
import time
import traceback

FAILURES = ("SILENT", "BAD-ERROR", "RAISED", "HANG", "MEMORY")
POSITION_WORDS = re.compile(r"\b(bytes?|offsets?|positions?|entry|entries|lines?)\b", re.I)


# -- the tools, run in-process ---------------------------------------------------------------------

def read_rows(data: str, options: dict[str, str]) -> dict[str, list[tuple]]:
    """What the data source returns for `options`: its own DataSourceReader, driven as Spark
    drives it (partitions() on the driver, which also logs the plan's data-loss notes; each
    InputPartition pickled and read() on an executor), without Spark. Rows per
    `<topic>-<partition>`, sorted by offset: (offset, timestamp µs, timestampType, key, value,
    headers)."""
    import pickle

    import pyarrow as pa
    import pyarrow.compute as pc

    from segmentlog_source.spark.source import SegmentLogReader

    try:
        reader = SegmentLogReader({"path": data, "includeHeaders": "true", **options})
        partitions = reader.partitions()
    except Exception as exc:
        exc._fuzz_phase = "plan"      # the driver's planning, not an executor's scan
        raise
    rows: dict[str, list[tuple]] = {}
    for partition in partitions:
        for batch in reader.read(pickle.loads(pickle.dumps(partition))):
            topic = batch.column("topic").to_pylist()
            partition_ids = batch.column("partition").to_pylist()
            offset = batch.column("offset").to_pylist()
            ts = pc.cast(batch.column("timestamp"), pa.int64()).to_pylist()
            ts_type = batch.column("timestampType").to_pylist()
            key = batch.column("key").to_pylist()
            value = batch.column("value").to_pylist()
            headers = batch.column("headers").to_pylist()
            for t, p, o, s, st, k, v, h in zip(topic, partition_ids, offset, ts, ts_type, key,
                                               value, headers):
                hs = tuple((x["key"], x["value"]) for x in h) if h is not None else None
                rows.setdefault(f"{t}-{p}", []).append((o, s, st, k, v, hs))
    for part in rows.values():
        part.sort(key=lambda r: r[0])
    return rows


class _Sink(io.TextIOBase):
    """A text stream that only counts (dump output can be large)."""

    def __init__(self):
        self.chars = 0

    def write(self, s):
        self.chars += len(s)
        return len(s)

    def writable(self):
        return True


def run_verify(data: str):
    """`segmentlog verify DATA` as cli/verify.py's run() does it: the partition reports."""
    from segmentlog_source.cli.verify import partition_dirs, verify_partition

    return [verify_partition(p.path, fs=p.fs) for p in partition_dirs([data])]


def dump_targets(data: str) -> list[str]:
    """Every file of the mutant as the listing shows it (a FIFO or a directory included)."""
    out = []
    for name in sorted(os.listdir(data)):
        path = os.path.join(data, name)
        if os.path.isdir(path) and not os.path.islink(path) and "-" in name:
            out += [os.path.join(path, n) for n in sorted(os.listdir(path))]
        else:
            out.append(path)
    return out


def run_dump(data: str, hook=None) -> None:
    """`segmentlog dump` of each file: deep iteration with data; indexes also with
    --verify-index-only and --index-sanity-check. Raises what dump raises."""
    from segmentlog_source.cli.dump import DumpOptions, dump_files

    deep = DumpOptions(deep_iteration=True, print_data_log=True)
    for path in dump_targets(data):
        if hook:
            hook(f"dump {os.path.basename(path)}")
        dump_files([path], deep, _Sink(), _Sink())
        if path.endswith((".index", ".timeindex")):
            dump_files([path], DumpOptions(verify_index_only=True), _Sink(), _Sink())
            dump_files([path], DumpOptions(index_sanity_check=True), _Sink(), _Sink())


# -- judging -------------------------------------------------------------------------------------

def _names(original, data: str) -> set[str]:
    """Names an error may use to point at the log: files and directories of the original or the
    mutant (a deleted file's name included), and the partitions."""
    names = {data, os.path.basename(data.rstrip("/"))} - {"data"}
    names |= set(original.data_dir_files)
    for part in original.partitions.values():
        names.add(part.name)
        names |= set(part.files)
    for root, dirs, files in os.walk(data):
        names |= set(dirs) | set(files)
    return {n for n in names if n}


def _frame(exc: BaseException) -> str:
    """The innermost frame of segmentlog_source in the traceback (where it went wrong)."""
    tb = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in tb if "segmentlog_source" in f.filename] or tb[-1:]
    if not ours:
        return "?"
    f = ours[-1]
    return f"{f.filename.split('segmentlog_source/')[-1]}:{f.lineno} {f.name}"


def classify_exception(exc: BaseException, names: set[str]) -> dict:
    from segmentlog_source.errors import SegmentLogError

    message = str(exc)
    names_file = any(n in message for n in names)
    ours = isinstance(exc, SegmentLogError)
    info = {"type": type(exc).__name__, "message": message[:400], "frame": _frame(exc),
            "names_file": names_file, "has_position": bool(POSITION_WORDS.search(message))}
    info["outcome"] = "clear-error" if ours and names_file else "BAD-ERROR"
    if not ours:
        info["why"] = f"raw {type(exc).__name__} (not a SegmentLogError)"
    elif not names_file:
        info["why"] = "the message names no file of the log"
    return info


def _batch_of(part, offset: int):
    for i, seg in enumerate(part.segments):
        for b in seg.batches:
            if b.first_offset <= offset <= b.last_offset:
                return i, b
    return None, None


def tail_state(path: str, position: int) -> str | None:
    """What the broker's shallow scan (spec §9.2, FileLogInputStream.nextBatch) finds at
    `position` of the (mutated) `.log`: "end" (the file ends there, or fewer than 18 bytes are
    left), "torn" (an entry whose declared size runs past the end: a partial write, silently
    ignored), or None (a whole entry, or a size below the minimum: corruption, not a tail)."""
    try:
        size = os.path.getsize(path) if os.path.isfile(path) else None
    except OSError:
        size = None
    if size is None:
        return None
    if position >= size - 17:
        return "end"
    with open(path, "rb") as f:
        f.seek(position + 8)
        length = int.from_bytes(f.read(4), "big", signed=True)
    if length < 14:
        return None
    return "torn" if position + 12 + length > size else None


def torn_prefix(rows: dict, expected: dict, original, mutation, data: str) -> str | None:
    """Whether `rows` differ from `expected` only by whole batches lost at the end of the
    mutated partition's last segment, where that segment's bytes (as mutated) end or hold a
    partial entry, at or after the mutation: a torn tail. Returns "end" / "torn" (which of the
    two the tail is), or None."""
    kind = None
    for name in set(rows) | set(expected):
        got, want = rows.get(name, []), expected.get(name, [])
        if got == want:
            continue
        if mutation.tail_from is None or name != mutation.partition:
            return None
        n = len(got)
        if n >= len(want) or want[:n] != got:
            return None
        part = original.partitions[name]
        last = len(part.segments) - 1
        lost_seg, lost = _batch_of(part, want[n][0])
        if lost_seg != last:
            return None
        start = 0
        if n:
            kept_seg, kept = _batch_of(part, got[-1][0])
            if kept is None or want[n][0] <= kept.last_offset:
                return None           # part of a batch returned
            if kept_seg == last:
                start = kept.position + kept.size
                if mutation.tail_from < start:
                    return None       # the mutation lies before the end of a batch returned
        # Batches without rows (control batches, aborted ones) may lie between the last batch
        # returned and the first one lost: walk over them as they were.
        for b in part.segments[last].batches:
            if start <= b.position < lost.position and b.position + b.size <= mutation.tail_from:
                start = b.position + b.size
        kind = tail_state(os.path.join(data, name, part.segments[last].log_name), start)
        if kind is None:
            return None
    return kind


def _diff(rows: dict, expected: dict) -> str:
    """A short account of how rows differ from the expected ones."""
    out = []
    for name in sorted(set(rows) | set(expected)):
        got, want = rows.get(name, []), expected.get(name, [])
        if got == want:
            continue
        got_set, want_set = set(got), set(want)
        extra, missing = got_set - want_set, want_set - got_set
        dup = len(got) - len(got_set)
        bits = [f"{name}: {len(got)} rows vs {len(want)}"]
        if missing:
            bits.append(f"{len(missing)} missing (offsets {sorted(r[0] for r in missing)[:4]}...)")
        if extra:
            ex = sorted(extra)[:2]
            want_at = {r[0]: r for r in want}
            shown = []
            for r in ex:
                w = want_at.get(r[0])
                what = "no such offset in R0" if w is None else "differs in " + ",".join(
                    f for f, a, b in zip(("offset", "timestamp", "timestampType", "key",
                                          "value", "headers"), r, w) if a != b)
                shown.append(f"offset {r[0]} ({what})")
            bits.append(f"{len(extra)} not in R0: {'; '.join(shown)}")
        if dup:
            bits.append(f"{dup} duplicated")
        out.append(", ".join(bits))
    return " | ".join(out)[:600]


def expected_rows(original, variant: str, mutation) -> list[dict] | None:
    """The acceptable row sets of a read variant for this mutant (None: not judged)."""
    base = original.expected[variant]
    if mutation.semantic_start is not None:
        # The checkpoint still parses and now says other log start offsets: the log's state
        # changed legitimately. Judged for full reads only, against the rows from the new start.
        if variant not in ("full", "lossy"):
            return None
        rows = {}
        for name, part in original.partitions.items():
            start = max(mutation.semantic_start.get((part.topic, part.partition), 0),
                        part.segments[0].base_offset if part.segments else 0)
            kept = [r for r in original.expected_nostart.get(name, []) if r[0] >= start]
            if kept:
                rows[name] = kept
        return [rows]
    if mutation.unreadable_checkpoint and variant in ("full", "lossy") \
            and original.expected_nostart:
        # What Kafka does with an unreadable checkpoint is fail; a reader that ignores it reads
        # from the first segment instead. Both are accepted.
        return [base, original.expected_nostart]
    return [base]


def judge_read(rows, exc, expected: list[dict] | None, original, mutation, names,
               data: str) -> dict:
    if exc is not None:
        return classify_exception(exc, names)
    if expected is None:
        return {"outcome": "unjudged"}
    if any(rows == e for e in expected):
        return {"outcome": "exact"}
    tail = torn_prefix(rows, expected[0], original, mutation, data)
    if tail:
        return {"outcome": "torn-prefix", "tail": tail, "detail": _diff(rows, expected[0])}
    return {"outcome": "SILENT", "detail": _diff(rows, expected[0])}


def judge_lossy(rows, exc, expected, warnings: list[str], names, original, mutation, data: str,
                whole_input_gone: bool) -> dict:
    if exc is not None:
        info = classify_exception(exc, names)
        from segmentlog_source.errors import LogNotFoundError
        if info["outcome"] == "clear-error":
            if whole_input_gone and isinstance(exc, LogNotFoundError):
                info["outcome"] = "clear-error"     # no partition left: about the whole input
            else:
                info["outcome"] = "RAISED"
                info["why"] = "failOnDataLoss=false raised instead of returning what is readable"
        return info
    if expected is None:
        return {"outcome": "unjudged"}
    if any(rows == e for e in expected):
        return {"outcome": "exact"}
    tail = torn_prefix(rows, expected[0], original, mutation, data)
    if tail:
        return {"outcome": "torn-prefix", "tail": tail}
    want = {}
    for e in expected:
        for name, part_rows in e.items():
            for r in part_rows:
                want.setdefault((name, r[0]), set()).add(r)
    bad, dup, lost = [], 0, 0
    for name, part_rows in rows.items():
        seen = set()
        for r in part_rows:
            if r[0] in seen:
                dup += 1
            seen.add(r[0])
            if r not in want.get((name, r[0]), ()):
                bad.append((name, r[0]))
    for name, part_rows in expected[0].items():
        got = {r[0] for r in rows.get(name, [])}
        lost += sum(1 for r in part_rows if r[0] not in got)
    if bad or dup:
        return {"outcome": "SILENT", "lost": lost,
                "detail": f"{len(bad)} rows altered or invented (e.g. {bad[:3]}), {dup} "
                          f"duplicated; " + _diff(rows, expected[0])}
    if lost and not warnings:
        return {"outcome": "SILENT", "lost": lost,
                "detail": f"{lost} rows lost and nothing logged; " + _diff(rows, expected[0])}
    return {"outcome": "partial", "lost": lost}


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage()[:300])


def run_mutant(spec, originals: dict, work: Path, hook=None) -> dict:
    """Build the mutant in `work` (emptied first), run every tool, judge each."""
    from tests.fuzz.mutations import NotApplicable, make_mutant

    hook = hook or (lambda stage: None)
    original = originals[spec.original]
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    data = str(work / "data")
    try:
        mutation = make_mutant(spec, original, Path(data))
    except NotApplicable as exc:
        return {"spec": spec, "skipped": str(exc)}
    result = {"spec": spec, "mutation": mutation.describe(), "operator": spec.operator,
              "where": mutation.where, "identity": mutation.identity, "tools": {}}
    hook(("mutation", mutation.describe()))
    names = _names(original, data)
    whole_input_gone = not _has_partition(data)
    tools = result["tools"]
    logger = logging.getLogger("segmentlog")
    rows_by_variant = {}
    for variant, options in original.variants.items():
        hook(("tool", f"reader:{variant}"))
        capture = _Capture()
        logger.addHandler(capture)
        rows, exc = None, None
        started = time.monotonic()
        try:
            rows = read_rows(data, options)
        except Exception as e:   # noqa: BLE001 - judged
            exc = e
        finally:
            logger.removeHandler(capture)
        rows_by_variant[variant] = rows
        expected = expected_rows(original, variant, mutation)
        if variant == "lossy":
            verdict = judge_lossy(rows, exc, expected, capture.messages, names, original,
                                  mutation, data, whole_input_gone)
        else:
            verdict = judge_read(rows, exc, expected, original, mutation, names, data)
        if exc is not None:
            verdict["phase"] = getattr(exc, "_fuzz_phase", "scan")
        verdict["seconds"] = round(time.monotonic() - started, 3)
        tools[f"reader:{variant}"] = verdict
    hook(("tool", "verify"))
    tools["verify"] = _judge_verify(data, names, tools)
    hook(("tool", "dump"))
    try:
        run_dump(data, hook=lambda stage: hook(("tool", stage)))
        tools["dump"] = {"outcome": "ok"}
    except Exception as e:   # noqa: BLE001 - judged
        tools["dump"] = classify_exception(e, names)
    _undetectable(tools, rows_by_variant, original, mutation, data)
    shutil.rmtree(work, ignore_errors=True)
    result["outcome"] = overall(result)
    return result


def _undetectable(tools: dict, rows_by_variant: dict, original, mutation, data: str) -> None:
    """SILENT verdicts on a mutant that is itself a valid log, read right, in a partition
    directory whose other files all agree with it, become UNDETECTABLE
    (consistency.py says why and how)."""
    from tests.fuzz.consistency import decode_partition, evidence_contradicts, expected_rows

    silent = [k for k, v in tools.items() if v["outcome"] == "SILENT"]
    name = mutation.partition
    if not silent or name is None or name not in original.independent_ok:
        return
    path = os.path.join(data, name)
    if not os.path.isdir(path):
        return
    batches = decode_partition(path)
    if batches is None or evidence_contradicts(data, name, batches) is not None:
        return
    part = original.partitions[name]
    bases = sorted(int(n.split(".")[0]) for n in os.listdir(path) if n.endswith(".log"))
    why = ("the mutant is a valid log, read right, and every other file of the partition agrees "
           "with it")
    for key in silent:
        if not key.startswith("reader:"):
            continue
        variant = key[len("reader:"):]
        rows = rows_by_variant.get(variant)
        options = original.variants[variant]
        want = expected_rows(batches, bases[0] if bases else 0, part.topic, part.partition,
                             options)
        if rows is None or want is None:
            continue
        others_ok = all(rows.get(p, []) == original.expected[variant].get(p, [])
                        for p in set(rows) | set(original.expected[variant]) if p != name)
        if others_ok and rows.get(name, []) == want:
            tools[key]["outcome"] = "UNDETECTABLE"
            tools[key]["why"] = why
    verify = tools.get("verify", {})
    if verify.get("outcome") == "SILENT" and not any(
            v["outcome"] == "SILENT" for k, v in tools.items() if k.startswith("reader:")):
        verify["outcome"] = "UNDETECTABLE"
        verify["why"] = why


def _judge_verify(data: str, names: set[str], tools: dict) -> dict:
    try:
        reports = run_verify(data)
    except Exception as e:   # noqa: BLE001 - judged
        return classify_exception(e, names)
    errors = [p for r in reports for p in r.errors]
    warnings = [p for r in reports for p in r.warnings]
    unnamed = [str(p) for p in errors + warnings if not any(n in p.path for n in names)]
    if unnamed:
        return {"outcome": "BAD-ERROR", "why": "a problem that names no file of the log",
                "message": unnamed[0][:300]}
    if errors:
        return {"outcome": "errors", "count": len(errors), "message": str(errors[0])[:300]}
    # A torn tail may pass verify when verify warns about it; a log cut at a batch boundary
    # (the file simply ends) leaves nothing in the .log to find. Once the log is a shorter one,
    # a range past its new end is a DataLossError.
    torn_warned = any("torn" in p.message for p in warnings)

    def accepted(v: dict) -> bool:
        if v["outcome"] in ("exact", "unjudged"):
            return True
        if v["outcome"] == "torn-prefix":
            return torn_warned or v["tail"] == "end"
        full = tools.get("reader:full", {})
        return (v["outcome"] == "clear-error" and v.get("type") == "DataLossError"
                and full.get("outcome") == "torn-prefix" and accepted(full))

    wrong = {name: v["outcome"] for name, v in tools.items()
             if name.startswith("reader:") and not accepted(v)}
    if wrong:
        return {"outcome": "SILENT", "why": "verify found no error, but reads gave " + ", ".join(
            f"{k[7:]}={v}" for k, v in sorted(wrong.items())),
            "warnings": [str(w)[:200] for w in warnings[:3]]}
    return {"outcome": "passed", "warnings": len(warnings)}


def _has_partition(data: str) -> bool:
    """Whether any `<topic>-<n>` directory still holds a regular segment `.log` file."""
    for name in os.listdir(data):
        path = os.path.join(data, name)
        if os.path.isdir(path) and not os.path.islink(path):
            for f in os.listdir(path):
                head = f.split(".")[0]
                if f.endswith(".log") and head.isdigit() and os.path.isfile(os.path.join(path, f)):
                    return True
    return False


def overall(result: dict) -> str:
    """One outcome per mutant, for the summary table."""
    tools = result.get("tools", {})
    outcomes = [v["outcome"] for v in tools.values()]
    for bad, label in (("HANG", "HANG"), ("MEMORY", "MEMORY"), ("BAD-ERROR", "BAD ERROR"),
                       ("SILENT", "SILENTLY WRONG"), ("RAISED", "LOSSY RAISED")):
        if bad in outcomes:
            return label
    if "UNDETECTABLE" in outcomes:
        return "undetectable"
    full = tools.get("reader:full", {}).get("outcome")
    if full == "clear-error":
        return "clear error"
    if full == "torn-prefix" or "torn-prefix" in outcomes:
        return "torn-tail prefix"
    if any(o == "clear-error" for k, o in ((k, v["outcome"]) for k, v in tools.items())
           if k.startswith("reader:")):
        return "clear error"
    if tools.get("verify", {}).get("outcome") == "passed":
        return "no effect"
    return "exact rows"


def failed(result: dict) -> list[str]:
    """The tools whose verdict breaks the rule, as `tool=OUTCOME` strings."""
    return [f"{k}={v['outcome']}" for k, v in result.get("tools", {}).items()
            if v["outcome"] in FAILURES]
