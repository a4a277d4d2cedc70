"""`segmentlog explain`: what a read with these options would touch, before reading any record.

The read is planned exactly as `spark.read.format("segmentlog")` plans it, with the same
options (--option NAME=VALUE, repeatable: subscribe, startingOffsets, endingTimestamp, ...):
through the .index and .timeindex files and a few batch headers. It prints each byte range of
each segment the executors would read, with the offsets they keep, the total bytes and their
share of all .log bytes under the paths. Timestamp options (startingTimestamp, endingTimestamp,
the *OffsetsByTimestamp maps) take epoch milliseconds or ISO-8601 times with a zone
(2024-04-27T09:30:00Z, 2024-04-27T11:30:00+02:00).

--where takes a SQL condition on offset, timestamp, partition and topic, comparisons joined by
AND (=, <, <=, >, >=, IN, BETWEEN; timestamps as TIMESTAMP '2023-11-14 22:13:20', in UTC).
As in Spark, a WHERE clause cuts bytes only with pushdown on (--option pushdown=true, or
register(spark, pushdown=True)); without it the plan is the options' alone, and a note says
what pushdown would read. Comparisons on other columns filter rows but never spare a byte.

--json prints one JSON object: {"paths", "options", "where", "pushdown", "ranges": [{"topic",
"partition", "path", "start", "end", "bytes", "offsetLo", "offsetHi" (exclusive), "task"}],
"bytes", "logBytes", "share", "tasks" (Spark tasks), "plannerBytesRead", "plannerRequests",
"keptBySpark", "pushdownBytes" (null unless --where without pushdown), "notes"}
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import logging
import sys

from ..errors import BadOptionError
from ..plan.options import parse_read_options
from ..plan.partition_sources import reads_metadata_log
from ..plan.predicates import RowFilter, fold
from ..plan.read_plan import ReadPlan, plan_read
from ..storage.log.log_directory import find_partitions
from ..storage.log.partition_log import PartitionLog
from .tables import render_table, share_text
from .where_clause import WhereClause, parse_where

HELP = "show the segments and byte ranges a read with these options would read"


@dataclass
class Explanation:
    plan: ReadPlan
    log_bytes: int
    pushdown: bool
    where: WhereClause | None
    pushdown_bytes: int | None   # what --where would read with pushdown on (None: not asked)

    def __str__(self) -> str:
        return text(self)

    @property
    def bytes(self) -> int:
        """The bytes the read's tasks would read."""
        return self.plan.nbytes

    @property
    def planner_bytes_read(self) -> int:
        return self.plan.planner_io.bytes_read

    @property
    def ranges(self) -> list[dict]:
        return _ranges(self.plan)


def read_options(paths: list[str], pairs: list[str]) -> dict[str, str]:
    """Spark-style options from NAME=VALUE pairs, with the paths as `load()` passes them."""
    options: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BadOptionError("--option", pair, "expected NAME=VALUE, e.g. "
                                 "--option startingOffsets=earliest")
        if name.lower() in ("path", "paths"):
            raise BadOptionError("--option", pair, "give the paths as arguments of explain")
        options[name] = value
    if len(paths) == 1:
        options["path"] = paths[0]
    else:
        options["paths"] = json.dumps(paths)
    return options


def explain_read(path, options: dict, where: str | None = None) -> Explanation:
    """explain() of a path (or a list of them) and a DataFrame reader's options, given as
    .options(**options) takes them (values as PySpark turns them into strings)."""
    paths = [str(path)] if isinstance(path, (str, bytes)) or not hasattr(path, "__iter__") \
        else [str(p) for p in path]
    pairs = [f"{name}={str(value).lower() if isinstance(value, bool) else value}"
             for name, value in options.items()]
    return explain(paths, pairs, where)


def explain(paths: list[str], pairs: list[str], where: str | None = None) -> Explanation:
    options = read_options(paths, pairs)
    options.setdefault("pushdown", "false")   # as the default registration reads
    opts = parse_read_options(options)
    clause = parse_where(where) if where is not None else None
    row_filter = fold(clause.predicates) if clause else RowFilter()
    plan = plan_read(opts, row_filter if opts.pushdown else RowFilter())
    pushdown_bytes = None
    if clause and not opts.pushdown:
        pushdown_bytes = plan_read(opts, row_filter).nbytes
    log_bytes = sum(s.size for p in find_partitions(list(opts.paths), config=opts.store,
                                                    metadata_log=reads_metadata_log(opts))
                    for s in PartitionLog.open(p.path, p.fs, topic=p.topic,
                                               partition=p.partition).segments)
    return Explanation(plan, log_bytes, opts.pushdown, clause, pushdown_bytes)


def _ranges(plan: ReadPlan) -> list[dict]:
    return [{"topic": t.topic, "partition": t.partition, "path": t.path, "start": t.start,
             "end": t.end, "bytes": t.nbytes, "offsetLo": t.offset_lo, "offsetHi": t.offset_hi,
             "task": i} for i, group in enumerate(plan.groups) for t in group.tasks]


def as_json(e: Explanation, paths: list[str], pairs: list[str], where: str | None) -> dict:
    # fs.* options may hold credentials: their values are never printed
    options = {name: "*****" if name.strip().lower().startswith("fs.") else value
               for name, value in (p.partition("=")[::2] for p in pairs)}
    return {"paths": paths, "options": options,
            "where": where, "pushdown": e.pushdown, "ranges": _ranges(e.plan),
            "bytes": e.plan.nbytes, "logBytes": e.log_bytes,
            "share": e.plan.nbytes / e.log_bytes if e.log_bytes else 0.0,
            "tasks": len(e.plan.groups), "plannerBytesRead": e.plan.planner_io.bytes_read,
            "plannerRequests": e.plan.planner_io.read_requests,
            "keptBySpark": e.where.kept_by_spark if e.where else [],
            "pushdownBytes": e.pushdown_bytes, "notes": list(e.plan.notes)}


def text(e: Explanation) -> str:
    ranges = _ranges(e.plan)
    out = ""
    if ranges:
        rows = [[f"{r['topic']}-{r['partition']}", r["path"].rsplit("/", 1)[-1], r["start"],
                 r["end"], r["bytes"], f"{r['offsetLo']}..{r['offsetHi'] - 1}", r["task"]]
                for r in ranges]
        out += render_table(["partition", "segment", "from byte", "to byte", "bytes",
                             "offsets kept", "task"], rows)
    segments = len({r["path"] for r in ranges})
    partitions = len({(r["topic"], r["partition"]) for r in ranges})
    out += (f"reads {e.plan.nbytes:,} of {e.log_bytes:,} bytes "
            f"({share_text(e.plan.nbytes, e.log_bytes)} of the log): {len(ranges)} byte "
            f"range{'s' * (len(ranges) != 1)} in {segments} segment{'s' * (segments != 1)} "
            f"of {partitions} partition{'s' * (partitions != 1)}, in {len(e.plan.groups)} "
            f"Spark task{'s' * (len(e.plan.groups) != 1)}\n")
    io = e.plan.planner_io
    out += (f"planning read {io.bytes_read:,} bytes of indexes and batch headers in "
            f"{io.read_requests:,} requests, and no record\n")
    if e.pushdown_bytes is not None:
        out += (f"note: --where is not pushed down, Spark filters the rows of these bytes; "
                f"with --option pushdown=true it would read {e.pushdown_bytes:,} bytes "
                f"({share_text(e.pushdown_bytes, e.log_bytes)} of the log)\n")
    for kept in e.where.kept_by_spark if e.where else []:
        out += f"note: {kept!r} is left to Spark: it filters rows but spares no bytes\n"
    for note in e.plan.notes:
        out += f"note: {note}\n"
    return out


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="+", metavar="DIR",
                        help="data directories or partition directories, as given to load()")
    parser.add_argument("--option", action="append", dest="read_options", default=[],
                        metavar="NAME=VALUE", help="a reader option, as .option(NAME, VALUE) "
                        "(repeatable), e.g. --option subscribe=orders")
    parser.add_argument("--where", metavar="SQL",
                        help="a WHERE condition, e.g. \"offset >= 1000 AND partition = 0\"")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object instead of the table (see above)")


def run(args) -> int:
    pairs = (getattr(args, "fs_options", None) or []) \
        + getattr(args, "command_fs_options", []) + args.read_options
    logger = logging.getLogger("segmentlog")
    level = logger.level
    if not getattr(args, "debug", False):
        logger.setLevel(logging.ERROR)   # the planner's warnings are the notes printed below
    try:
        explanation = explain(args.paths, pairs, args.where)
    finally:
        logger.setLevel(level)
    if args.json:
        print(json.dumps(as_json(explanation, args.paths, args.read_options, args.where),
                         ensure_ascii=False))
    else:
        sys.stdout.write(text(explanation))
    return 0
