"""Every read and write option segmentlog takes, declared once: its name, values, default, a
one-line meaning and, where it matters, the first PySpark release that gives it effect.

option_names.py screens option names with these declarations, the parsers take their choices
from them (options.py), and the options pages of the documentation are generated from them
(devtools/docs_reference.py): a name that is here is taken, checked and documented, and a name
that is not is refused everywhere. Meanings are one line of Markdown; the pages say the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

READ, STREAM, WRITE = "read", "stream", "write"
BOTH_READS = (READ, STREAM)


@dataclass(frozen=True)
class Option:
    name: str
    kinds: tuple[str, ...]           # read (spark.read), stream (readStream), write (both writes)
    values: str                      # what it takes, as a user writes it
    default: str                     # "" where absent means "not given"
    meaning: str
    group: str                       # the heading it is documented under
    choices: tuple[str, ...] = ()    # the accepted values of a choice option (lower case)
    since: str = ""                  # the first PySpark release where it takes effect, if not all
    spark: bool = False              # a name of Spark's Kafka source, with its meaning


_R = BOTH_READS
OPTIONS: tuple[Option, ...] = (
    # -- which partitions and offsets
    Option("path", (READ, STREAM, WRITE), "a path or URI", "",
           "what `load(path)` / `save(path)` pass: a data directory, a partition directory",
           "where"),
    Option("paths", _R, "a JSON array of paths", "",
           "what `load([p1, p2])` passes: several data or partition directories", "where"),
    Option("assign", _R, '`{"orders":[0,1]}`', "",
           "only these partitions (at most one of assign / subscribe / subscribePattern)",
           "where", spark=True),
    Option("subscribe", _R, "`orders,clicks`", "",
           "only these topics; with no selector every topic under the path is read", "where",
           spark=True),
    Option("subscribePattern", _R, "a regex", "",
           "topics in which the pattern is found (anchor it: `^orders$`), never internal ones",
           "where", spark=True),
    Option("startingOffsets", _R, '`earliest`, `latest` (streams), or `{"orders":{"0":23}}`',
           "`earliest` (`latest` in a stream)",
           "where to start; -2 = earliest; a partition left out starts at the earliest", "where",
           spark=True),
    Option("endingOffsets", (READ,), '`latest`, or `{"orders":{"0":50}}`', "`latest`",
           "where to stop (exclusive); -1 = latest", "where", spark=True),
    Option("startingTimestamp", _R, "epoch milliseconds, or ISO-8601 with a zone", "",
           "every partition starts at the first offset whose timestamp is >= it (ListOffsets)",
           "where", spark=True),
    Option("endingTimestamp", (READ,), "epoch milliseconds, or ISO-8601 with a zone", "",
           "every partition ends at the first offset whose timestamp is >= it", "where",
           spark=True),
    Option("startingOffsetsByTimestamp", _R, '`{"orders":{"0":1700000000000}}`', "",
           "`startingTimestamp` per partition; wins over `startingOffsets`", "where", spark=True),
    Option("endingOffsetsByTimestamp", (READ,), '`{"orders":{"0":1700000000000}}`', "",
           "`endingTimestamp` per partition; wins over `endingOffsets`", "where", spark=True),
    Option("startingOffsetsByTimestampStrategy", _R, "`error`, `latest`", "`error`",
           "when no record is that late: fail, or start at the end", "where",
           choices=("error", "latest"), spark=True),
    # -- what a read returns, and how it is checked
    Option("failOnDataLoss", _R, "`true`, `false`", "`true`",
           "a damaged or missing range fails naming file and byte; `false` skips it with a warning",
           "rows", spark=True),
    Option("isolationLevel", _R, "`read_uncommitted`, `read_committed`", "`read_uncommitted`",
           "`read_committed` drops aborted transactions and stops at the last stable offset",
           "rows", choices=("read_uncommitted", "read_committed")),
    Option("includeHeaders", _R, "`true`, `false`", "`false`",
           "adds `headers array<struct<key:string,value:binary>>`", "rows", spark=True),
    Option("includePayload", _R, "`true`, `false`", "`true`",
           "`false` leaves `key`, `value` and `headers` out: cheap metadata queries", "rows"),
    Option("verifyChecksums", _R, "`true`, `false`", "`true`",
           "check every batch's CRC-32C; structure and offsets are checked either way", "rows"),
    Option("view", (READ,), "`records`, `batches`, `segments`", "`records`",
           "what a row is: a record, a record batch, or a segment file", "rows",
           choices=("records", "batches", "segments")),
    Option("pushdown", (READ,), "`true`, `false`", "`false`",
           "plan WHERE clauses on offset, timestamp, partition, topic through the indexes",
           "rows", since="4.1"),
    # -- how a read is split into Spark partitions
    Option("minPartitions", _R, "an integer", "",
           "at least this many Spark partitions, balanced by bytes", "split", spark=True),
    Option("maxRecordsPerPartition", (READ,), "an integer", "",
           "at most this many offsets per Spark partition, cut as Spark cuts them", "split",
           spark=True),
    Option("maxBytesPerPartition", _R, "bytes", "128 MiB (32 MiB decoding, 2 GiB in views)",
           "segments bigger than this are split at index entries", "split"),
    # -- streams
    Option("maxOffsetsPerTrigger", (STREAM,), "an integer", "",
           "at most this many offsets per micro-batch, shared by backlog", "stream",
           since="4.2", spark=True),
    Option("minOffsetsPerTrigger", (STREAM,), "an integer", "",
           "wait for this many new offsets (or `maxTriggerDelay`) before a micro-batch",
           "stream", since="4.2", spark=True),
    Option("maxTriggerDelay", (STREAM,), "a duration (`15m`, `30s`)", "`15m`",
           "the longest wait for `minOffsetsPerTrigger`", "stream", since="4.2", spark=True),
    # -- decoded keys and values
    Option("valueFormat", _R,
           "`binary`, `string`, `json`, `avro`, `confluent-avro`, `kafka-internal`", "`binary`",
           "decode values into `value_decoded` (the raw `value` stays)", "decode",
           choices=("binary", "string", "json", "avro", "confluent-avro", "kafka-internal")),
    Option("keyFormat", _R, "`binary`, `string`, `json`, `avro`, `confluent-avro`", "`binary`",
           "decode keys into `key_decoded`", "decode",
           choices=("binary", "string", "json", "avro", "confluent-avro")),
    Option("valueSchema", _R, "a Spark DDL or JSON schema (json); Avro schema JSON or .avsc path",
           "", "the values' schema; `json` without one infers it from 1000 values", "decode"),
    Option("keySchema", _R, "as `valueSchema`", "", "the keys' schema", "decode"),
    Option("schemaRegistry", _R, "a `_schemas` partition or data dir, `.avsc` dir, or URL", "",
           "where `confluent-avro` takes schemas; default the loaded path's `_schemas` topic",
           "decode"),
    Option("readerSchemaId", _R, "a schema id", "",
           "the values' reader schema (default: the newest of `<topic>-value`)", "decode"),
    Option("keyReaderSchemaId", _R, "a schema id", "",
           "the keys' reader schema (default: the newest of `<topic>-key`)", "decode"),
    Option("mode", _R, "`PERMISSIVE`, `FAILFAST`, `DROPMALFORMED`", "`PERMISSIVE`",
           "a payload that does not decode: null and `value_error`, an error, or left out",
           "decode", choices=("permissive", "failfast", "dropmalformed")),
    # -- Kafka's tiered storage
    Option("remoteTier", (READ,), "a path or URI", "",
           "a KIP-405 remote tier read below the local partitions", "tiered"),
    Option("remoteLogMetadata", (READ,), "comma-separated directories", "",
           "where the `__remote_log_metadata` partitions are (default: the data directories)",
           "tiered"),
    Option("remoteTierPrivateKey", (READ,), "a PEM path, or `id=path,id2=path2`", "",
           "the private key(s) of an encrypted Aiven tier", "tiered"),
    # -- writes
    Option("topic", (WRITE,), "a topic name", "",
           "the topic of every row (wins over a `topic` column)", "write", spark=True),
    Option("numPartitions", (WRITE,), "an integer", "1 for a new topic",
           "partitions of a topic that does not exist yet", "write"),
    Option("compression", (WRITE,), "`none`, `gzip`, `snappy`, `lz4`, `zstd`", "`none`",
           "the batches' codec", "write"),
    Option("compression.type", (WRITE,), "as `compression`", "`none`",
           "Kafka's name of `compression` (also `kafka.compression.type`)", "write"),
    Option("compression.gzip.level", (WRITE,), "1 to 9", "the codec's",
           "gzip's level (also with `kafka.`)", "write"),
    Option("compression.lz4.level", (WRITE,), "1 to 17", "the codec's",
           "lz4's level (also with `kafka.`)", "write"),
    Option("compression.zstd.level", (WRITE,), "-131072 to 22", "the codec's",
           "zstd's level (also with `kafka.`)", "write"),
    Option("batch.size", (WRITE,), "bytes", "16384",
           "uncompressed bytes per record batch (also `kafka.batch.size`)", "write"),
    Option("maxRecordsPerBatch", (WRITE,), "an integer", "",
           "at most this many records per record batch", "write"),
    Option("timestampType", (WRITE,), "`CreateTime`, `LogAppendTime`", "`CreateTime`",
           "the `timestamp` column (or write time), or the commit time", "write"),
    Option("fsync", (WRITE,), "`none`, `commit`, `batch`", "`commit`",
           "when written bytes are synced to disk", "write"),
    Option("lockTimeoutMs", (WRITE,), "milliseconds", "60000",
           "how long a commit waits for another writer of the same partitions", "write"),
    Option("stagingRetentionMs", (WRITE,), "milliseconds", "86400000",
           "after this, a dead driver's staged task output is removed by a later commit", "write"),
    Option("queryName", (WRITE,), "a name", "",
           "a streaming query's name, kept with its committed batch ids", "write"),
    Option("checkpointLocation", (WRITE,), "a path", "",
           "a streaming write's checkpoint (Spark passes it on)", "write"),
    # -- topic configs a write may give (they override the topic's file for the write)
    Option("segment.bytes", (WRITE,), "bytes", "the topic's, else 1 GiB",
           "when a segment rolls by size", "topic"),
    Option("segment.ms", (WRITE,), "milliseconds", "the topic's, else 7 days",
           "when a segment rolls by age", "topic"),
    Option("segment.index.bytes", (WRITE,), "bytes", "the topic's, else 10 MiB",
           "the largest `.index` / `.timeindex` a segment has", "topic"),
    Option("index.interval.bytes", (WRITE,), "bytes", "the topic's, else 4096",
           "bytes of batches between two index entries", "topic"),
    Option("cleanup.policy", (WRITE,), "`delete`, `compact`, `compact,delete`",
           "the topic's, else `delete`", "the policy the sink applies after each commit",
           "topic"),
    Option("retention.ms", (WRITE,), "milliseconds, -1 for none", "the topic's",
           "given (here or in the topic's configs), the sink deletes older segments", "topic"),
    Option("retention.bytes", (WRITE,), "bytes, -1 for none", "the topic's",
           "given, the sink deletes the oldest segments past this size", "topic"),
)

GROUPS = {
    "where": "Which partitions and offsets",
    "rows": "What a row holds, and how it is checked",
    "split": "How a read is split into Spark partitions",
    "stream": "Streams",
    "decode": "Decoded keys and values",
    "tiered": "Kafka's tiered storage",
    "write": "Writes",
    "topic": "Topic configs a write may give",
}

_BY_NAME = {o.name.lower(): o for o in OPTIONS}


def names(kind: str) -> tuple[str, ...]:
    """The option names a `kind` (read, stream, write) takes, in declaration order."""
    return tuple(o.name for o in OPTIONS if kind in o.kinds)


def choices(name: str) -> tuple[str, ...]:
    """The accepted values of a choice option."""
    return _BY_NAME[name.lower()].choices
