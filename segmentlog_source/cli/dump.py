"""`segmentlog dump`: Kafka's `kafka-dump-log.sh` (DumpLogSegments), in its 4.0 formats (spec §10).

Each file is handled by the text after the last '.' of its name: `.log` and KRaft `.checkpoint`
snapshots (dump_log.py), `.index`, `.timeindex`, `.txnindex` and producer `.snapshot`
(dump_indexes.py). stdout is line for line what Kafka prints. The problems Kafka reports on
stderr after all files (index mismatches, time-index errors, non-consecutive offsets) use its
wording, grouped per file in the order the files were given (Kafka's order is a hash map's).

Where Kafka throws a stack trace this tool says what is wrong instead: a file with no suffix
(`leader-epoch-checkpoint`) or a directory is skipped with a note on stderr, an index whose entry
points past the end of its log reports log offset -1, and a missing file or a batch larger than
--max-message-size is one `segmentlog: ...` line (exit 2).

A file may be a URI of an object store or HDFS (s3://bucket/kafka-logs/orders-0/...log, with
--fs-option for the store); it is read with ranged reads and printed under its URI, otherwise
exactly as a local copy of it would be.

--json prints one JSON object per line instead of Kafka's text; every object has a "kind":

  file         {"path", "type": log|kraft-snapshot|index|timeindex|txnindex|snapshot,
                "baseOffset" (log, index, timeindex), "entries" (all but log files),
                "endOffset", "epoch" (kraft-snapshot; null for bootstrap.checkpoint)}
  batch        {"baseOffset", "lastOffset", "count" (null for legacy), "position", "size",
                "magic", "compresscodec", "crc", "isvalid", "isTransactional", "isControl",
                "producerId", "producerEpoch", "baseSequence", "lastSequence",
                "partitionLeaderEpoch", "timestampType", "maxTimestamp", "deleteHorizonMs"
                (null when absent)}; a legacy compressed wrapper's baseOffset is its first
               inner offset (Kafka's text line shows only the last)
  record       {"offset", "timestamp", "keySize", "valueSize", "headerKeys"} (--deep-iteration)
               + "sequence" (v2), "isValid" and "crc" (legacy), "controlType" (control
               records) with "coordinatorEpoch" (markers) or "control" (the KRaft record as
               Kafka prints it), "key" and "payload" (--print-data-log; UTF-8 with
               replacement, null when null)
  invalidBytes {"position", "count"}: bytes after the last whole batch
  index        {"offset", "position"}          timeindex  {"timestamp", "offset"}
  abortedTxn   {"version", "producerId", "firstOffset", "lastOffset", "lastStableOffset"}
  producer     {"producerId", "producerEpoch", "coordinatorEpoch", "currentTxnFirstOffset",
                "lastTimestamp", "firstSequence", "lastSequence", "lastOffset", "offsetDelta",
                "timestamp"} (the last five null when the entry has no batch metadata)
  sanityCheck  {"path", "passed": true}

The stderr report is Kafka's text in both modes.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import TextIO

from ..errors import BadOptionError, LogNotFoundError
from ..format.batch import INT32_MAX
from ..storage.io import filesystem_for
from ..storage.log_files import offset_from_file_name
from .dump_indexes import dump_offset_index, dump_snapshot, dump_time_index, dump_txn_index
from .dump_log import dump_log, java_file

HELP = "print segment files as Kafka's kafka-dump-log.sh does"
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024

# Text files of a partition or data directory that have no suffix, so Kafka cannot dispatch them.
KNOWN_PLAIN_FILES = {
    "leader-epoch-checkpoint": "the partition's leader epochs (a text checkpoint: read it as text)",
    "recovery-point-offset-checkpoint": "a data directory's recovery points (a text checkpoint)",
    "log-start-offset-checkpoint": "a data directory's log start offsets (a text checkpoint)",
    "replication-offset-checkpoint": "a data directory's high watermarks (a text checkpoint)",
    "cleaner-offset-checkpoint": "the log cleaner's progress (a text checkpoint)",
    "quorum-state": "the KRaft quorum state (JSON text)",
}
SUFFIXES = ".log, .checkpoint, .index, .timeindex, .txnindex or .snapshot"
HANDLERS = {".log": dump_log, ".checkpoint": dump_log, ".index": dump_offset_index,
            ".timeindex": dump_time_index, ".txnindex": dump_txn_index, ".snapshot": dump_snapshot}


@dataclass(frozen=True)
class DumpOptions:
    deep_iteration: bool = False
    print_data_log: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT32_MAX
    skip_record_metadata: bool = False
    json: bool = False

    @property
    def deep(self) -> bool:
        # Kafka: --print-data-log implies --deep-iteration.
        return self.deep_iteration or self.print_data_log


@dataclass
class DumpProblems:
    """What Kafka prints on stderr after all files, keyed by the file's absolute path."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @staticmethod
    def add(group: dict, path: str, pair: tuple[int, int]) -> None:
        group.setdefault(path, []).append(pair)

    def write(self, err: TextIO) -> None:
        # Kafka prepends index mismatches and non-consecutive pairs to Scala lists, so each
        # file's pairs come out last-found first; the time-index groups keep discovery order.
        for path, pairs in self.index_mismatches.items():
            err.write(f"Mismatches in :{path}\n")
            err.writelines(f"  Index offset: {i}, log offset: {o}\n" for i, o in reversed(pairs))
        for path, pairs in self.time_mismatches.items():
            err.write(f"Found timestamp mismatch in :{path}\n")
            err.writelines(f"  Index timestamp: {i}, log timestamp: {t}\n" for i, t in pairs)
        for path, pairs in self.time_out_of_order.items():
            err.write(f"Found out of order timestamp in :{path}\n")
            err.writelines(f"  Index timestamp: {i}, Previously indexed timestamp: {p}\n"
                           for i, p in pairs)
        for pairs in self.time_not_found.values():
            err.write("The following indexed offsets are not found in the log.\n")
            err.writelines(f"Indexed offset: {i}, found log offset: {o}\n" for i, o in pairs)
        for path, pairs in self.non_consecutive.items():
            err.write(f"Non-consecutive offsets in {path}\n")
            err.writelines(f"  {a} is followed by {b}\n" for a, b in reversed(pairs))


class Dumper:
    """Dumps files one after another, collecting the stderr report for the end."""

    def __init__(self, options: DumpOptions, out: TextIO, err: TextIO, config=None):
        self.options = options
        self.config = config  # a StoreConfig for URIs (None: the stores' own defaults)
        self.out = out
        self.err = err
        self.problems = DumpProblems()

    def line(self, text: str) -> None:
        if not self.options.json:
            self.out.write(text + "\n")

    def obj(self, kind: str, **fields) -> None:
        if self.options.json:
            self.out.write(json.dumps({"kind": kind, **fields}, ensure_ascii=False) + "\n")

    def base_offset_of(self, fs, shown: str) -> int:
        """The segment base offset a file name starts with (Kafka: name.split('.')(0).toLong)."""
        name = fs.basename(shown)
        offset = offset_from_file_name(name)
        if offset is None:
            raise BadOptionError("--files", shown, "a segment file name must start with the "
                                 "segment's base offset, e.g. 00000000000000000000.log")
        return offset

    def dump_file(self, arg: str) -> None:
        fs, path = filesystem_for(arg, self.config)
        # A URI is shown as it names the object (Java's File would mangle its "//").
        shown = path if "://" in path else java_file(path)
        self.line(f"Dumping {shown}")
        name = fs.basename(shown)
        if fs.is_dir(path):
            self.err.write(f"Ignoring {shown}: it is a directory (pass the files in it)\n")
            return
        if "." not in name:
            what = KNOWN_PLAIN_FILES.get(name)
            if what is None and name.endswith("-offset-checkpoint"):
                what = "an offset checkpoint (text)"
            what = what or f"its name has no suffix, so its kind is unknown (expected {SUFFIXES})"
            self.err.write(f"Ignoring {shown}: {what}\n")
            return
        handler = HANDLERS.get(name[name.rindex("."):])
        if handler is None:
            self.err.write(f"Ignoring unknown file {shown}\n")
            return
        if not fs.exists(path):
            what = "object (or bucket)" if "://" in path else "file"
            raise LogNotFoundError(f"no such {what}: {shown}")
        handler(self, fs, path, shown)

    def finish(self) -> None:
        self.problems.write(self.err)


def dump_files(files: list[str], options: DumpOptions = DumpOptions(), out: TextIO | None = None,
               err: TextIO | None = None, config=None) -> DumpProblems:
    """Dump `files` as `segmentlog dump --files ...` does; returns the problems it reported.
    `config` (a StoreConfig) says how to reach the stores of URI files."""
    dumper = Dumper(options, out or sys.stdout, err or sys.stderr, config)
    try:
        for arg in files:
            dumper.dump_file(arg)
    finally:
        (out or sys.stdout).flush()
        dumper.finish()
    return dumper.problems


def add_arguments(parser) -> None:
    parser.add_argument("--files", required=True, metavar="F1,F2,...",
                        help="comma-separated files or URIs (s3://...), each handled by its "
                        "suffix: " + SUFFIXES)
    parser.add_argument("--deep-iteration", action="store_true",
                        help="also print the records of each batch")
    parser.add_argument("--print-data-log", action="store_true",
                        help="also print keys and values as UTF-8 (implies --deep-iteration)")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="check .index/.timeindex entries against the log, printing "
                        "only the problems")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="run the index sanity check and print whether it passed")
    parser.add_argument("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE,
                        metavar="N", help="largest batch read at an .index entry")
    parser.add_argument("--max-bytes", type=int, default=INT32_MAX, metavar="N",
                        help="read only the first N bytes of each .log")
    parser.add_argument("--skip-record-metadata", action="store_true",
                        help="with deep iteration, print only keys and values")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per line instead of Kafka's text (see above)")


def run(args) -> int:
    for name in ("max_message_size", "max_bytes"):
        if getattr(args, name) <= 0:
            raise BadOptionError("--" + name.replace("_", "-"), getattr(args, name),
                                 "must be positive")
    options = DumpOptions(args.deep_iteration, args.print_data_log, args.verify_index_only,
                          args.index_sanity_check, args.max_message_size, args.max_bytes,
                          args.skip_record_metadata, args.json)
    dump_files([f for f in args.files.split(",") if f], options,
               config=getattr(args, "store_config", None))
    return 0
