"""`segmentlog retain`: delete the segments a broker's retention would delete.

For every partition (or those of `--topic`), as Kafka's UnifiedLog.deleteOldSegments: segments
below the log start offset; then, when the topic's cleanup.policy includes `delete`, the oldest
segments beyond retention.bytes and those whose newest record is older than retention.ms. When
every segment goes, a new empty one keeps the log end offset. Files are renamed `.deleted`
before they are removed, and the data directory's checkpoints are brought up to date.

Settings come, each over the one before, from Kafka's defaults (retention.ms 7 days,
retention.bytes unlimited), the cluster's configs in a Kafka 4.x data directory's metadata
log (cluster-wide default, this broker's, the topic's own), the topic's `segmentlog config`
file; `--retention-ms`, `--retention-bytes` and `--config NAME=VALUE` override them for this
run. A partition another writer holds is an error that names it, and is left untouched.
"""

from __future__ import annotations

from ..storage.log.log_manager import LogManager
from ..values.kafka_internal.cluster_configs import metadata_topic_configs
from .tables import render_table
from .topic_config import add_override_arguments, overrides_of

HELP = "delete old segments by retention.ms / retention.bytes, as a broker's retention does"


def add_arguments(parser) -> None:
    add_override_arguments(parser)
    parser.add_argument("--retention-ms", type=int, metavar="MS",
                        help="retention.ms for this run (-1: no time limit)")
    parser.add_argument("--retention-bytes", type=int, metavar="BYTES",
                        help="retention.bytes per partition for this run (-1: no size limit)")


def run(args) -> int:
    overrides = overrides_of(args, {"retention.ms": args.retention_ms,
                                    "retention.bytes": args.retention_bytes})
    manager = LogManager(args.path, topics=args.topics, overrides=overrides,
                         lock_timeout_ms=args.lock_timeout_ms,
                         metadata_configs=metadata_topic_configs)
    rows = []
    for part in manager.partitions():
        result = manager.retain_partition(part)
        reasons = sorted({reason for _, reason in result.deleted})
        rows.append([f"{part.topic}-{part.partition}", len(result.deleted), result.deleted_bytes,
                     result.log_start_offset, result.log_end_offset,
                     "; ".join(reasons) or "-"])
    print(render_table(["partition", "segments deleted", "bytes deleted", "log start",
                        "log end", "why"], rows), end="")
    return 0
