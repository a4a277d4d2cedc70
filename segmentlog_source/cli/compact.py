"""`segmentlog compact`: compact logs as Kafka's log cleaner does.

For every partition of a compacted topic (cleanup.policy includes `compact`; Kafka's own
compacted topics such as __consumer_offsets and _schemas are by default), or those of
`--topic`: the newest record of every key is kept over the cleanable range (every segment
before the active one, below the last stable offset and min.compaction.lag.ms), offsets are
kept as they are, tombstones stay for delete.retention.ms after the cleaning that first keeps
them, aborted transactions go. Cleaned segments are swapped in with the broker's
`.cleaned` -> `.swap` protocol, so a crash at any point leaves a valid log, and the
cleaner-offset-checkpoint records where the next cleaning starts.

`--dedupe-buffer-bytes` bounds the key -> offset map as log.cleaner.dedupe.buffer.size does;
a log with more keys is cleaned in several passes. A named topic that is not compacted is an
error (set cleanup.policy=compact with `segmentlog config` or --config).
"""

from __future__ import annotations

from ..storage.log.log_manager import LogManager
from ..values.kafka_internal.cluster_configs import metadata_topic_configs
from ..storage.log.offset_map import DEFAULT_DEDUPE_BUFFER_BYTES
from .tables import render_table
from .topic_config import add_override_arguments, overrides_of

HELP = "compact logs (newest record per key), as Kafka's log cleaner does"


def add_arguments(parser) -> None:
    add_override_arguments(parser)
    parser.add_argument("--delete-retention-ms", type=int, metavar="MS",
                        help="delete.retention.ms for this run (how long tombstones stay)")
    parser.add_argument("--min-compaction-lag-ms", type=int, metavar="MS",
                        help="min.compaction.lag.ms for this run")
    parser.add_argument("--dedupe-buffer-bytes", type=int, metavar="N",
                        default=DEFAULT_DEDUPE_BUFFER_BYTES,
                        help="memory for the key -> offset map (log.cleaner.dedupe.buffer.size)")


def run(args) -> int:
    overrides = overrides_of(args, {"delete.retention.ms": args.delete_retention_ms,
                                    "min.compaction.lag.ms": args.min_compaction_lag_ms})
    manager = LogManager(args.path, topics=args.topics, overrides=overrides,
                         lock_timeout_ms=args.lock_timeout_ms,
                         metadata_configs=metadata_topic_configs,
                         dedupe_buffer_bytes=args.dedupe_buffer_bytes)
    rows = []
    for part in manager.partitions():
        done = manager.compact_partition(part)
        name = f"{part.topic}-{part.partition}"
        if done.skipped:
            rows.append([name, 0, None, None, None, None, f"skipped ({done.skipped})"])
            continue
        passes = done.passes
        rows.append([name, sum(p.cleaned for p in passes), passes[0].first_dirty,
                     passes[-1].end_offset, sum(p.records_read for p in passes),
                     sum(p.records_kept for p in passes),
                     f"{sum(p.bytes_read for p in passes):,} -> "
                     f"{sum(p.bytes_written for p in passes):,} bytes"])
    print(render_table(["partition", "passes", "first dirty", "cleaned to", "records read",
                        "records kept", "segments"], rows), end="")
    return 0
