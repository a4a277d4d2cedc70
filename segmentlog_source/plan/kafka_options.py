"""`kafka.`-prefixed options: Kafka client settings that Spark's Kafka source hands to its
consumer (reads) or producer (writes), as a job ported from `format("kafka")` carries them.

Each one is either honoured (mapped onto segmentlog's own option: it changes what is read or
written), ignored with one warning (it only tells a client how to reach or talk to a broker,
and there is none), or refused (it would change the data, and segmentlog cannot do it the way
Kafka would). A name in none of these lists is refused too: a misspelt `kafka.isolation.level`
must not quietly return aborted records.
"""

from __future__ import annotations

PREFIX = "kafka."

# Settings every Kafka client shares: connection, security, metrics. No broker, no effect.
_CLIENT = (
    "bootstrap.servers", "client.id", "client.dns.lookup", "security.protocol",
    "security.providers", "request.timeout.ms", "default.api.timeout.ms",
    "connections.max.idle.ms", "send.buffer.bytes", "receive.buffer.bytes",
    "metadata.max.age.ms", "metadata.recovery.strategy", "metadata.recovery.rebootstrap.trigger.ms",
    "metric.reporters", "enable.metrics.push", "auto.include.jmx.reporter",
)
_CLIENT_PREFIXES = ("sasl.", "ssl.", "reconnect.backoff.", "retry.backoff.",
                    "socket.connection.setup.timeout.", "metrics.")

# Consumer settings about groups, fetching and polling: how rows travel, never which rows.
_CONSUMER = (
    "group.id", "group.instance.id", "group.protocol", "group.remote.assignor", "client.rack",
    "session.timeout.ms", "heartbeat.interval.ms", "fetch.min.bytes", "fetch.max.bytes",
    "fetch.max.wait.ms", "max.partition.fetch.bytes", "max.poll.records", "max.poll.interval.ms",
    "auto.commit.interval.ms", "partition.assignment.strategy", "allow.auto.create.topics",
    # Spark lists topics through the admin client, which never lists internal topics, so this
    # consumer setting has no effect in Spark either (ConsumerStrategy.scala:137-138).
    "exclude.internal.topics", "internal.leave.group.on.close",
)

# Producer settings about delivery, buffering and timing: the bytes of a committed write are the
# same. linger.ms only decides how long a producer waits to fill a batch; segmentlog always fills
# batches up to batch.size. max.request.size only refuses big records, which a log can hold.
_PRODUCER = (
    "acks", "linger.ms", "retries", "delivery.timeout.ms", "max.block.ms", "buffer.memory",
    "max.request.size", "max.in.flight.requests.per.connection", "enable.idempotence",
    "metadata.max.idle.ms", "partitioner.adaptive.partitioning.enable",
    "partitioner.availability.timeout.ms", "transaction.timeout.ms",
)

# Honoured: the Kafka setting -> segmentlog's option of the same meaning.
READ_MAPPED = {"isolation.level": "isolationLevel", "check.crcs": "verifyChecksums"}
WRITE_MAPPED = {"compression.type": "compression.type", "batch.size": "batch.size",
                "compression.gzip.level": "compression.gzip.level",
                "compression.lz4.level": "compression.lz4.level",
                "compression.zstd.level": "compression.zstd.level"}

# The values Kafka's client takes for the honoured settings that are ValidStrings: lower case
# only (ConfigDef.ValidString.in compares exactly; ConsumerConfig isolation.level, ProducerConfig
# compression.type). segmentlog's own options take any case; their kafka. spellings take what
# the client would, so a job that works with a broker behaves the same here, and one that fails
# there fails here too.
EXACT_VALUES = {"isolation.level": ("read_uncommitted", "read_committed"),
                "compression.type": ("none", "gzip", "snappy", "lz4", "zstd")}

# Refused, with why. The first five are refused by Spark's Kafka source itself
# (KafkaSourceProvider.scala:295-332 for the consumer, :773-783 for the producer).
READ_REFUSED = {
    "auto.offset.reset": "use startingOffsets (earliest, or a JSON map) to say where to start",
    "key.deserializer": "keys are bytes; deserialize them with DataFrame operations",
    "value.deserializer": "values are bytes; deserialize them with DataFrame operations",
    "enable.auto.commit": "there is no consumer group to commit offsets to",
    "interceptor.classes": "interceptors can change records; segmentlog runs none",
}
WRITE_REFUSED = {
    "key.serializer": "keys are written as bytes (cast the key column to binary or string)",
    "value.serializer": "values are written as bytes (cast the value column to binary or string)",
    "interceptor.classes": "interceptors can change records; segmentlog runs none",
    "partitioner.class": "rows go where Kafka's default partitioner puts them, or to the "
                         "partition column",
    "partitioner.ignore.keys": "rows go where Kafka's default partitioner puts them, or to the "
                               "partition column",
    "transactional.id": "segmentlog writes no transactions (each commit is atomic already)",
}


def _ignored(name: str, kind_settings: tuple[str, ...]) -> bool:
    return name in _CLIENT or name in kind_settings or name.startswith(_CLIENT_PREFIXES)


def classify(name: str, kind: str) -> tuple[str, str | None]:
    """What to do with the setting `name` (lower case, without `kafka.`) on a `kind` ("read" or
    "write"): ("mapped", segmentlog's option), ("ignored", None), ("refused", why) or
    ("unknown", None)."""
    mapped, refused, settings = ((READ_MAPPED, READ_REFUSED, _CONSUMER) if kind == "read"
                                 else (WRITE_MAPPED, WRITE_REFUSED, _PRODUCER))
    if name in mapped:
        return "mapped", mapped[name]
    if name in refused:
        return "refused", refused[name]
    if _ignored(name, settings):
        return "ignored", None
    return "unknown", None


def value_problem(name: str, value: object) -> str | None:
    """Why Kafka's client would refuse `value` for the honoured setting `name` (lower case,
    without `kafka.`), or None."""
    allowed = EXACT_VALUES.get(name)
    if allowed is None or str(value) in allowed:
        return None
    return f"Kafka's client takes {', '.join(allowed)} (exactly so, in lower case)"


def known_names(kind: str) -> list[str]:
    """Every `kafka.` option a `kind` knows by its exact name (for "did you mean")."""
    mapped, refused, settings = ((READ_MAPPED, READ_REFUSED, _CONSUMER) if kind == "read"
                                 else (WRITE_MAPPED, WRITE_REFUSED, _PRODUCER))
    return [PREFIX + n for n in (*mapped, *refused, *_CLIENT, *settings)]
