"""`segmentlog stats`: one row per topic-partition, read from batch headers only.

For each partition under the given directories: its segments, the first and last offset, the
timestamp of the first record and the largest timestamp (Kafka's maxTimestamp: the last one
when producers write in order), the bytes of its .log files and the codecs of its batches.
Only batch headers are parsed (the bodies of large batches are skipped, none is decompressed),
so this is quick even for large logs.

--deep reads every batch instead, checks its CRC and counts its records: data records, and
the transaction markers (control records) that consumers never see.

--json prints one JSON object per partition and line instead of the table:
  {"topic", "partition", "directory", "segments", "batches", "logStartOffset", "firstOffset",
   "lastOffset", "logEndOffset", "firstTimestamp", "maxTimestamp" (epoch ms; null: none),
   "bytes", "codecs" {codec: batches}, "magics", "records", "controlRecords" (--deep; else
   null), "invalidBytes" (bytes after the last whole batch of a segment)}

Timestamps in the table are UTC. A path may be a URI (s3://...), read with ranged reads.
"""

from __future__ import annotations

import json
import sys

from ..plan.partition_sources import find_local_partitions
from ..storage.log.log_summary import PartitionSummary, summarize_partition
from ..storage.log.partition_log import PartitionLog
from .progress import Progress, show_bar
from .tables import render_table, timestamp_text

HELP = "one row per topic-partition: segments, offsets, timestamps, bytes, codecs"


def partition_stats(paths: list[str], *, deep: bool = False, config=None,
                    quiet: bool = True) -> list[PartitionSummary]:
    """A summary of every partition under `paths`, sorted by topic and partition."""
    logs = [PartitionLog.open(p.path, p.fs, topic=p.topic, partition=p.partition)
            for p in find_local_partitions(list(paths), config)]
    shown = show_bar(quiet)
    total = sum(s.size for log in logs for s in log.segments) if shown else 0
    with Progress(total, "stats", shown=shown) as progress:
        return [summarize_partition(log, deep=deep, on_bytes=progress.update) for log in logs]


def as_json(s: PartitionSummary) -> dict:
    def timestamp(ms):
        return None if ms is None or ms < 0 else ms

    return {"topic": s.topic, "partition": s.partition, "directory": s.directory,
            "segments": len(s.segments), "batches": s.batches,
            "logStartOffset": s.log_start_offset, "firstOffset": s.first_offset,
            "lastOffset": s.last_offset, "logEndOffset": s.log_end_offset,
            "firstTimestamp": timestamp(s.first_timestamp),
            "maxTimestamp": timestamp(s.max_timestamp), "bytes": s.size,
            "codecs": dict(sorted(s.codecs.items())), "magics": sorted(s.magics),
            "records": s.records, "controlRecords": s.control_records,
            "invalidBytes": s.invalid_bytes}


def table(summaries: list[PartitionSummary], deep: bool) -> str:
    header = ["partition", "segments", "first offset", "last offset", "first timestamp",
              "max timestamp", "bytes", "codecs"]
    if deep:
        header += ["records", "markers"]
    rows = []
    for s in summaries:
        row = [s.name, len(s.segments), s.first_offset, s.last_offset,
               timestamp_text(s.first_timestamp), timestamp_text(s.max_timestamp), s.size,
               ",".join(sorted(s.codecs)) or "-"]
        if deep:
            row += [s.records, s.control_records]
        rows.append(row)
    text = render_table(header, rows)
    segments = sum(len(s.segments) for s in summaries)
    text += (f"{len(summaries)} partition{'s' * (len(summaries) != 1)}, {segments} "
             f"segment{'s' * (segments != 1)}, {sum(s.size for s in summaries):,} bytes")
    if deep:
        text += f", {sum(s.records for s in summaries):,} records"
    text += "\n"
    for s in summaries:
        for seg in s.segments:
            if seg.invalid_bytes:
                text += (f"note: {seg.invalid_bytes} invalid bytes at the end of {seg.log_path} "
                         "(a torn write; `segmentlog verify` says more)\n")
    return text


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="+", metavar="DIR",
                        help="data directories or partition directories (paths or URIs)")
    parser.add_argument("--deep", action="store_true",
                        help="read every batch: check CRCs and count records")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per partition instead of the table (see above)")


def run(args) -> int:
    summaries = partition_stats(args.paths, deep=args.deep,
                                config=getattr(args, "store_config", None),
                                quiet=getattr(args, "quiet", False))
    if args.json:
        for s in summaries:
            print(json.dumps(as_json(s), ensure_ascii=False))
    else:
        sys.stdout.write(table(summaries, args.deep))
    return 0
