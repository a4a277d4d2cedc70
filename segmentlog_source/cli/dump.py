"""`segmentlog dump`: print segment files as Kafka's `kafka-dump-log.sh` (DumpLogSegments) does.

`segmentlog dump DIR...` takes partition or data directories, as the other commands do, and
dumps every segment, index and producer snapshot file in them: partition by partition (topic,
then partition), each segment in base-offset order with its `.log`, `.index`, `.timeindex` and
`.txnindex`, then the producer `.snapshot` files in offset order. `--files F1,F2,...` is
kafka-dump-log.sh's flag, unchanged: the files named, in the order given. Both may be given
(the directories' files first). A run that dumped no file at all (only directories or unknown
files given with --files) exits 2 after saying so.

Each file is handled by the text after the last '.' of its name: `.log` segments and KRaft
`.checkpoint` snapshots, `.index`, `.timeindex`, `.txnindex` and producer `.snapshot` files.
stdout is line for line what the DumpLogSegments of Kafka 4.4 prints for the same files and
flags. The problems it reports on stderr after all files (index mismatches, time-index errors,
non-consecutive offsets) use its wording, grouped per file in the order the files were given
(Kafka's order is a hash map's). Two differences are deliberate: Kafka 4.3 and 4.4 report
"-1 is followed by N" as non-consecutive offsets for every .log whose first record is not at
offset 0 (a false report, absent from 4.2), segmentlog reports only real gaps; and
--index-sanity-check also fails an index whose entries are out of order (Kafka's check looks at
the last entry and the file length only, and passes it).

Where Kafka throws a stack trace this tool says what is wrong instead: a file with no suffix
(`leader-epoch-checkpoint`) or a directory is skipped with a note on stderr, an index whose entry
points past the end of its log reports log offset -1, and a missing file or a batch larger than
--max-message-size is one `segmentlog: ...` line (exit 2).

A file may be a URI of an object store or HDFS (s3://bucket/kafka-logs/orders-0/...log, with
--fs-option for the store); it is read with ranged reads and printed under its URI, otherwise
exactly as a local copy of it would be.

--offsets-decoder, --transaction-log-decoder and --share-group-state-decoder print each record's
key and payload as DumpLogSegments' decoders for `__consumer_offsets`, `__transaction_state` and
`__share_group_state` print them: Kafka's JSON, `<DELETE>` for a tombstone, and one
"Unknown record type ..." or "Error at offset ..." line for a record they cannot read. A record
without a key, where Kafka's decoders throw, is an error naming its batch.
--remote-log-metadata-decoder prints each `__remote_log_metadata` record's payload as the Java
object Kafka's RemoteLogMetadataSerde reads it into (its toString; no key), or "Error at offset
..., skipping." with Kafka's message. Like Kafka's, the decoders imply --print-data-log; given
several, Kafka's order picks one: offsets, transaction log, cluster metadata, remote log
metadata, share group state.

--cluster-metadata-decoder prints KRaft's `__cluster_metadata` log and snapshots as Kafka's
does (`payload: {"type":"TOPIC_RECORD","version":0,"data":{...}}`, "Error at <offset>,
skipping. ..." for a record it cannot read), with one deliberate difference: secrets are
redacted. A ConfigRecord value whose name Kafka's config schema marks a password or does not
know, and a SCRAM credential's salt, storedKey and serverKey, print as "(redacted)" where Kafka
prints them (text and --json); --print-data-log without the decoder prints the payload of such
a record, in a __cluster_metadata-* directory or a .checkpoint file, as (redacted), and that of
a record there that does not decode (its bytes may hold a password no decoder reaches). A
`.checkpoint` snapshot without its SnapshotHeader first and SnapshotFooter last, with a bad CRC
or an offset gap, is printed as Kafka prints it and named on stderr with its byte and offset.

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
               replacement, null when null; with a decoder, the text it prints or null)
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

import sys
from typing import TextIO

from ..errors import BadOptionError, LogNotFoundError
from ..format.batch import INT32_MAX
from ..plan.partition_sources import find_local_partitions
from ..storage.io.filesystem import filesystem_for
from ..storage.log.kraft_snapshot import SNAPSHOT_NAME
from ..storage.log.log_directory import METADATA_TOPIC
from ..storage.log_files import INDEX_SUFFIXES, LOG_SUFFIX, SNAPSHOT_SUFFIX, kind_of
from ..format.remote_log_metadata import TOPIC as REMOTE_LOG_METADATA
from ..values.kafka_internal.messages import CONSUMER_OFFSETS, SHARE_GROUP_STATE, \
    TRANSACTION_STATE
from ..values.kafka_internal.metadata_messages import CLUSTER_METADATA
from .dump_context import DEFAULT_MAX_MESSAGE_SIZE, Dumper, DumpOptions, DumpProblems
from .dump_indexes import dump_offset_index, dump_snapshot, dump_time_index, dump_txn_index
from .dump_log import dump_log, java_file
from .progress import Progress, show_bar

HELP = "print segment files as Kafka's kafka-dump-log.sh does"

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


# The order of a segment's files in `segmentlog dump DIR`; producer snapshots after the segments.
_SUFFIX_ORDER = {s: i for i, s in enumerate((LOG_SUFFIX, *INDEX_SUFFIXES))}


def partition_files(paths: list[str], config=None) -> list[str]:
    """Every segment, index and producer snapshot file of the partitions under `paths` (data or
    partition directories, or URIs of them), in the order `segmentlog dump DIR` dumps them. A
    `__cluster_metadata-0` directory given itself (a data directory's listing leaves it out)
    comes last, with its KRaft `.checkpoint` snapshots after its segments."""
    metadata = [p for p in paths if _is_metadata_dir(p, config)]
    files = []
    parts = find_local_partitions([p for p in paths if p not in metadata], config) \
        if len(metadata) < len(paths) else []
    for part in parts:
        fs = part.fs if part.fs is not None else filesystem_for(part.path, config)[0]
        files += _files_of(fs, part.path)
    for given in metadata:
        fs, path = filesystem_for(given, config)
        files += _files_of(fs, path)
        files += sorted(fs.join(path, name) for name in fs.list_dir(path)
                        if SNAPSHOT_NAME.match(name))
    return files


def _is_metadata_dir(given: str, config) -> bool:
    fs, path = filesystem_for(given, config)
    name = fs.basename(path.rstrip("/"))
    return name.startswith(METADATA_TOPIC + "-") and fs.is_dir(path)


def _files_of(fs, path: str) -> list[str]:
    kinds = [(k, name) for name in fs.list_dir(path) if (k := kind_of(name)) is not None]
    segments = sorted((k[0], _SUFFIX_ORDER[k[1]], name) for k, name in kinds
                      if k[1] != SNAPSHOT_SUFFIX)
    snapshots = sorted((k[0], name) for k, name in kinds if k[1] == SNAPSHOT_SUFFIX)
    return [fs.join(path, entry[-1]) for entry in (*segments, *snapshots)]


def dump_file(d: Dumper, arg: str) -> None:
    """Dump one file (or URI), chosen by its suffix as Kafka's DumpLogSegments does."""
    fs, path = filesystem_for(arg, d.config)
    # A URI is shown as it names the object (Java's File would mangle its "//").
    shown = path if "://" in path else java_file(path)
    d.line(f"Dumping {shown}")
    name = fs.basename(shown)
    if fs.is_dir(path):
        d.err.write(f"Ignoring {shown}: it is a directory (--files takes files; "
                    f"`segmentlog dump {shown}` dumps the files in it)\n")
        return
    if "." not in name:
        what = KNOWN_PLAIN_FILES.get(name)
        if what is None and name.endswith("-offset-checkpoint"):
            what = "an offset checkpoint (text)"
        what = what or f"its name has no suffix, so its kind is unknown (expected {SUFFIXES})"
        d.err.write(f"Ignoring {shown}: {what}\n")
        return
    handler = HANDLERS.get(name[name.rindex("."):])
    if handler is None:
        d.err.write(f"Ignoring unknown file {shown}\n")
        return
    if not fs.exists(path):
        what = "object (or bucket)" if "://" in path else "file"
        raise LogNotFoundError(f"no such {what}: {shown}")
    done = d.done
    d.dumped += 1
    handler(d, fs, path, shown)
    d.advance(max(0, fs.size(path) - (d.done - done)))   # what the handler did not count


def dump_files(files: list[str], options: DumpOptions = DumpOptions(), out: TextIO | None = None,
               err: TextIO | None = None, config=None, progress=None) -> DumpProblems:
    """Dump `files` as `segmentlog dump --files ...` does; returns the problems it reported.
    `config` (a StoreConfig) says how to reach the stores of URI files; `progress` is called
    with the bytes done, as they are done."""
    dumper = Dumper(options, out or sys.stdout, err or sys.stderr, config, progress)
    try:
        for arg in files:
            dump_file(dumper, arg)
    finally:
        (out or sys.stdout).flush()
        dumper.finish()
    dumper.problems.files_dumped = dumper.dumped
    return dumper.problems


# The decoder flags, in Kafka's order (given several, the first wins): flag, topic, what it prints
DECODERS = (
    ("--offsets-decoder", CONSUMER_OFFSETS, "keys and values as __consumer_offsets records"),
    ("--transaction-log-decoder", TRANSACTION_STATE,
     "keys and values as __transaction_state records"),
    ("--cluster-metadata-decoder", CLUSTER_METADATA,
     "values as KRaft cluster metadata records (__cluster_metadata logs and .checkpoint "
     "snapshots). Unlike Kafka's, secrets are redacted: sensitive or unknown ConfigRecord values "
     "and SCRAM credentials print as \"(redacted)\""),
    ("--remote-log-metadata-decoder", REMOTE_LOG_METADATA,
     "values as __remote_log_metadata records"),
    ("--share-group-state-decoder", SHARE_GROUP_STATE,
     "keys and values as __share_group_state records"),
)


def add_arguments(parser) -> None:
    parser.set_defaults(dump_parser=parser)
    parser.add_argument("paths", nargs="*", metavar="DIR",
                        help="partition or data directories (or URIs): every segment, index "
                        "and snapshot file in them, segment by segment")
    parser.add_argument("--files", metavar="F1,F2,...",
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
    for flag, _, what in DECODERS:
        parser.add_argument(flag, action="store_true",
                            help=f"print {what} (implies --print-data-log)")


def run(args) -> int:
    for name in ("max_message_size", "max_bytes"):
        if not 0 < getattr(args, name) <= INT32_MAX:
            raise BadOptionError("--" + name.replace("_", "-"), getattr(args, name),
                                 f"must be between 1 and {INT32_MAX}")
    options = DumpOptions(args.deep_iteration, args.print_data_log, args.verify_index_only,
                          args.index_sanity_check, args.max_message_size, args.max_bytes,
                          args.skip_record_metadata, args.json, decoder_topic(args))
    config = getattr(args, "store_config", None)
    if not args.paths and args.files is None:   # (a usage error, as argparse's)
        args.dump_parser.error("give partition or data directories (segmentlog dump DIR) "
                               "or --files F1,F2,...")
    files = partition_files(args.paths, config) if args.paths else []
    files += [f for f in (args.files or "").split(",") if f]
    shown = show_bar(getattr(args, "quiet", False))
    total = _total_bytes(files, config) if shown else 0
    with Progress(total, "dump", shown=shown) as progress:
        problems = dump_files(files, options, progress.around_bar(sys.stdout),
                              progress.around_bar(sys.stderr), config, progress.update)
    if not problems.files_dumped:
        raise BadOptionError("--files", args.files, "no segment, index or snapshot file was "
                             "dumped (see the lines above; `segmentlog dump DIR` dumps a "
                             "partition directory's files)")
    return 0


def decoder_topic(args) -> str | None:
    """The internal topic a decoder flag names; given several, the first in Kafka's order."""
    for flag, topic, _ in DECODERS:
        if getattr(args, flag[2:].replace("-", "_"), False):
            return topic
    return None


def _total_bytes(files: list[str], config) -> int:
    """The bytes of the files that exist (the others are reported when their turn comes)."""
    total = 0
    for arg in files:
        fs, path = filesystem_for(arg, config)
        if fs.exists(path) and not fs.is_dir(path):
            total += fs.size(path)
    return total
