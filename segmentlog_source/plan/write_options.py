"""Writer options (df.write / writeStream), with the names and defaults of Kafka's producer and
topic configs, checked on the driver before any task runs.

Spark hands options over as strings in a case-insensitive dict. Every bad value is a
BadOptionError naming the option as the user spelled it in the docs (`segment.bytes`, not the
LogConfig field), so `writer()` fails before a single row is staged. Names are checked first
(option_names.py): the producer settings of Spark's Kafka sink (`kafka.compression.type`,
`kafka.batch.size`, `kafka.compression.<codec>.level`) are honoured, connection settings
ignored with a warning, anything else refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from typing import Mapping

from ..errors import BadOptionError
from ..format.batch import CODEC_IDS, CODEC_NAMES, DEFAULT_MAX_BATCH_BYTES, INT32_MAX
from ..format.codecs import COMPRESSION_LEVELS
from ..storage.io.store_config import DEFAULT_CONFIG, StoreConfig
from ..storage.log.log_config import LogConfig
from ..storage.log.log_directory import METADATA_TOPIC
from ..storage.log.topic_configs import log_config_of
from .option_names import Screened, screen
from .option_values import choice_option, int_option
from .store_options import parse_store_options

TIMESTAMP_TYPES = {"createtime": "CreateTime", "logappendtime": "LogAppendTime"}
# fsync policy -> LogConfig.fsync: "commit" syncs the appended segments before the commit is
# marked done, so a commit that returned survives a power cut; "batch" also syncs every batch.
FSYNC_POLICIES = {"none": "none", "commit": "close", "batch": "always"}

PRODUCER_BATCH_SIZE = 16384          # the producer's batch.size
DEFAULT_LOCK_TIMEOUT_MS = 60_000     # how long a commit waits for another writer's locks
DEFAULT_STAGING_RETENTION_MS = 24 * 3600 * 1000
MAX_WAIT_MS = 24 * 3600 * 1000       # a day: a longer lock wait is a hang
# Every partition is a directory: this many is already far more than one topic of a busy cluster.
MAX_PARTITIONS = 10_000

# Kafka's Topic.validate: legal characters and length; "." and ".." are not topics.
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_LENGTH = 249

# LogConfig field -> the option name a user writes (errors name the option, not the field).
# Topic configs a write may give (they override the topic's file, topic_configs.py, for it);
# retention ones make the sink apply retention after each commit.
TOPIC_CONFIG_OPTIONS = ("segment.bytes", "segment.ms", "segment.index.bytes",
                        "index.interval.bytes", "cleanup.policy", "retention.ms",
                        "retention.bytes")
_LOG_CONFIG_OPTIONS = {"segment_bytes": "segment.bytes", "segment_ms": "segment.ms",
                       "segment_index_bytes": "segment.index.bytes",
                       "index_interval_bytes": "index.interval.bytes", "fsync": "fsync"}


@dataclass(frozen=True)
class WriteOptions:
    path: str
    topic: str | None                  # the `topic` option: wins over a `topic` column
    codec: int                         # compression (batch.CODEC_NAMES index)
    batch_bytes: int                   # batch.size: bytes per RecordBatch (uncompressed bound)
    max_records_per_batch: int | None
    log_append_time: bool              # timestampType=LogAppendTime
    fsync: str                         # none | commit | batch
    num_partitions: int | None         # None: not given (a new topic then gets 1)
    log_config: LogConfig
    lock_timeout_ms: int
    staging_retention_ms: int
    store: StoreConfig = DEFAULT_CONFIG   # the fs.* options: a store URI is refused with them
    compression_level: int | None = None  # compression.<codec>.level (None: Kafka's default)
    ignored: tuple[str, ...] = ()      # accepted options of no effect (one warning)
    # The topic configs given as options (Kafka's names): over the topic's file, for this write
    topic_configs: dict = field(default_factory=dict)

    @property
    def partitions_for_new_topic(self) -> int:
        return self.num_partitions or 1


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    screened = screen(options, "write")
    try:
        return _parse(screened)
    except BadOptionError as err:
        raise screened.renamed(err) from None


def _parse(screened: Screened) -> WriteOptions:
    opts = screened.options
    path = opts.get("path")
    if not path:
        raise BadOptionError("path", None, "no path given: use save(path) or start(path)")
    topic = opts.get("topic")
    if topic is not None:
        check_topic_name(topic, "topic")
    codec_name = _compression(opts)
    fsync = choice_option(opts, "fsync", tuple(FSYNC_POLICIES), "commit")
    config_values = {
        "segment_bytes": int_option(opts, "segment.bytes", LogConfig.segment_bytes,
                                    maximum=INT32_MAX),
        "segment_ms": int_option(opts, "segment.ms", LogConfig.segment_ms),
        "segment_index_bytes": int_option(opts, "segment.index.bytes",
                                          LogConfig.segment_index_bytes, maximum=INT32_MAX),
        "index_interval_bytes": int_option(opts, "index.interval.bytes",
                                           LogConfig.index_interval_bytes, minimum=0,
                                           maximum=INT32_MAX),
        "fsync": FSYNC_POLICIES[fsync],
    }
    try:
        log_config = LogConfig(**config_values)
    except BadOptionError as err:  # LogConfig names its fields; the user knows the options
        name = _LOG_CONFIG_OPTIONS.get(err.name, err.name)
        raise BadOptionError(name, opts.get(name.lower(), err.value), err.reason) from None
    topic_configs = {name: str(opts[name]).strip() for name in TOPIC_CONFIG_OPTIONS
                     if name in opts}
    log_config_of(topic_configs)   # each value checked now, naming its option
    timestamp_type = choice_option(opts, "timestampType", tuple(TIMESTAMP_TYPES), "createtime")
    num_partitions = int_option(opts, "numPartitions", None, maximum=MAX_PARTITIONS)
    return WriteOptions(
        path=path,
        topic=topic,
        codec=CODEC_IDS[codec_name],
        batch_bytes=int_option(opts, "batch.size", PRODUCER_BATCH_SIZE,
                               maximum=DEFAULT_MAX_BATCH_BYTES),
        max_records_per_batch=int_option(opts, "maxRecordsPerBatch", None, maximum=INT32_MAX),
        log_append_time=TIMESTAMP_TYPES[timestamp_type] == "LogAppendTime",
        fsync=fsync,
        num_partitions=num_partitions,
        log_config=log_config,
        lock_timeout_ms=int_option(opts, "lockTimeoutMs", DEFAULT_LOCK_TIMEOUT_MS, minimum=0,
                                   maximum=MAX_WAIT_MS),
        staging_retention_ms=int_option(opts, "stagingRetentionMs",
                                        DEFAULT_STAGING_RETENTION_MS, maximum=MAX_WAIT_MS * 365),
        store=parse_store_options(opts),
        compression_level=_compression_level(opts, codec_name),
        ignored=screened.ignored,
        topic_configs=topic_configs,
    )


def check_topic_name(topic: str, what: str = "topic") -> None:
    """Kafka's rules for a topic name; it becomes a directory name, so they matter here too.
    KRaft's `__cluster_metadata` is refused: records written there would land in a broker's
    metadata log (its `__cluster_metadata-0` directory) if the data directory holds one."""
    if not topic or topic in (".", "..") or len(topic) > MAX_TOPIC_LENGTH \
            or not _TOPIC_CHARS.fullmatch(topic):
        raise BadOptionError(what, topic, f"not a legal Kafka topic name (1-{MAX_TOPIC_LENGTH} "
                                          "of a-z A-Z 0-9 . _ -, not '.' or '..')")
    if topic == METADATA_TOPIC:
        raise BadOptionError(what, topic, "KRaft's metadata log, which only Kafka's controllers "
                                          "write; segmentlog never writes to it")


def _compression(opts: dict) -> str:
    # `compression` as the issue names it; `compression.type` is the producer's own name.
    given = {name: opts[name] for name in ("compression", "compression.type") if name in opts}
    values = {str(v).strip().lower() for v in given.values()}
    if len(values) > 1:
        raise BadOptionError("compression", given.get("compression"),
                             f"conflicts with compression.type={given['compression.type']!r}")
    if not values:
        return "none"
    value = values.pop()
    if value not in CODEC_NAMES:
        name = "compression" if "compression" in given else "compression.type"
        raise BadOptionError(name, given[name], f"expected one of {', '.join(CODEC_NAMES)}")
    return value


def _compression_level(opts: dict, codec_name: str) -> int | None:
    """compression.<codec>.level (KIP-390), as the producer takes it: each one given is checked
    against its codec's range, and the chosen codec's is used (-1 is gzip's default)."""
    level = None
    for name, codec in CODEC_IDS.items():
        option = f"compression.{name}.level"
        if codec not in COMPRESSION_LEVELS or option not in opts:
            continue
        levels = COMPRESSION_LEVELS[codec]
        low = -1 if name == "gzip" else levels.start
        value = int_option(opts, option, None, minimum=low, maximum=levels.stop - 1)
        if name == "gzip" and value == 0:
            raise BadOptionError(option, opts[option], "expected -1 (the default) or 1 to 9")
        if name == codec_name:
            level = None if value == -1 else value
    return level
