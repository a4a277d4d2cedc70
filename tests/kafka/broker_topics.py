"""What the test broker is given to write (one KafkaClient run), and the reads that compare
segmentlog's view of its log directory with Spark's Kafka source reading the broker.

Records are KafkaClient.java's `record(...)`: keys (some null), values (some null, some not
UTF-8), headers (some records none, one header with a null value, a repeated key) and CreateTime
timestamps base + i s, every 7th (5th on `multi`) older than the ones before it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
STEP_MS = 1000
# Small segments and dense indexes, so reads cross segments and index entries: segment.bytes
# is at least 1 MiB since Kafka 4.1, internal.segment.bytes is the topic config for tests.
SMALL_SEGMENTS = ("--config", "internal.segment.bytes=4096", "--config",
                  "index.interval.bytes=512")
# Topics segmentlog writes and the broker then serves (test_broker_serves.py), created here so
# the one KafkaClient run makes them too: -m with the clean-shutdown marker, -n without it.
ADOPTED = ("adopt-m", "adopt-n", "crc-m", "crc-n", "gap-m", "gap-n")
ADOPTED_PARTITIONS = 2
# The log manager phase (log_manager_live.py). segmentlog's retained and compacted files replace
# the -m/-n topics' (ADOPTED_PARTITIONS each, so adoption.observe asks for them all).
# lm-keyed is produced here and compacted later by the broker's own cleaner: created with
# min.cleanable.dirty.ratio=1, which no log can exceed, so nothing cleans it until that phase
# lowers the ratio (after copying its files).
LM_RETENTION_MS = 3 * 3600 * 1000
LM_COMPACT_CONFIGS = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
LM_DELETE_CONFIGS = {"cleanup.policy": "delete", "retention.ms": str(LM_RETENTION_MS)}
LM_KEYED = "lm-keyed"
LM_LIVE = "lm-live"   # what LogManager may do to a running broker's partition
LM_KEYED_CONFIGS = {"cleanup.policy": "compact", "internal.segment.bytes": "4096",
                    "segment.ms": "15000", "index.interval.bytes": "512",
                    "min.cleanable.dirty.ratio": "1"}


def base_timestamp() -> int:
    """Two hours ago, in whole seconds: old enough that every CreateTime is in the past, and far
    inside the broker's limits (retention is off, and the past is not limited)."""
    return (int(time.time()) - 2 * 3600) * 1000


def produce_commands(base: int) -> list[list]:
    commands = []
    for codec in CODECS:
        topic = f"codec-{codec}"
        commands += [["create-topic", topic, *SMALL_SEGMENTS],
                     ["produce", topic, "--codec", codec, "--count", 240, "--batch", 12,
                      "--late-every", 7, "--value-bytes", 80, "--base-ts", base]]
    commands += [
        ["create-topic", "lat", "--config", "message.timestamp.type=LogAppendTime"],
        ["produce", "lat", "--codec", "lz4", "--count", 20, "--batch", 5, "--base-ts", base],
        ["produce", "lat", "--codec", "none", "--count", 10, "--batch", 5, "--prefix", "more"],
        ["create-topic", "multi", "--partitions", 3, *SMALL_SEGMENTS],
        ["produce", "multi", "--partitions", 3, "--count", 150, "--batch", 15, "--late-every", 5,
         "--value-bytes", 60, "--base-ts", base],
        ["create-topic", "txn", "--partitions", 2],
        ["produce", "txn", "--partitions", 2, "--count", 6, "--prefix", "plain", "--base-ts", base],
        ["produce", "txn", "--partitions", 2, "--count", 10, "--txn", "commit", "--prefix", "c1",
         "--batch", 4, "--base-ts", base],
        ["produce", "txn", "--partitions", 2, "--count", 10, "--txn", "abort", "--prefix", "a1",
         "--codec", "zstd", "--batch", 4, "--base-ts", base],
        ["interleave", "txn", "--partitions", 2, "--count", 8, "--codec", "gzip",
         "--base-ts", base],
        ["produce", "txn", "--partitions", 2, "--count", 4, "--txn", "commit", "--prefix", "c2",
         "--codec", "snappy", "--base-ts", base],
        ["produce", "txn", "--partitions", 2, "--count", 4, "--prefix", "plain2",
         "--base-ts", base],
    ]
    commands += [["create-topic", t, "--partitions", ADOPTED_PARTITIONS] for t in ADOPTED]
    return commands + GROUP_COMMANDS + log_manager_commands(base) + admin_commands(base)


# Consumer groups of both protocols read topics above to their end and commit (KafkaClient
# consume-group), so __consumer_offsets holds a classic group's records and KIP-848's; the
# second commits in a transaction, so __transaction_state and __consumer_offsets hold that too.
GROUP_COMMANDS = [
    ["consume-group", "multi", "--group", "classic-group", "--protocol", "classic",
     "--partitions", 3],
    ["consume-group", "txn", "--group", "consumer-group", "--protocol", "consumer",
     "--partitions", 2, "--txn", "commit"],
]


def _configs(configs: dict[str, str]) -> list[str]:
    return [word for k, v in configs.items() for word in ("--config", f"{k}={v}")]


def log_manager_commands(base: int) -> list[list]:
    """The log manager phase's topics, and lm-keyed's records: keys repeating (--keys), every
    13th value a tombstone, an aborted and a committed transaction over the same keys, several
    producers; CreateTime 1 s apart, so segment.ms rolls every ~15 records."""
    commands = [["create-topic", f"lm-{kind}-{suffix}", "--partitions", ADOPTED_PARTITIONS,
                 *_configs(configs)]
                for suffix in ("m", "n")
                for kind, configs in (("compact", LM_COMPACT_CONFIGS),
                                      ("delete", LM_DELETE_CONFIGS))]
    keyed = (LM_KEYED, "--prefix", "k", "--value-bytes", 30)
    return commands + [
        ["create-topic", LM_KEYED, *_configs(LM_KEYED_CONFIGS)],
        ["produce", *keyed, "--count", 500, "--batch", 7, "--keys", 37, "--base-ts", base],
        ["produce", *keyed, "--count", 60, "--batch", 6, "--keys", 37, "--txn", "abort",
         "--codec", "gzip", "--base-ts", base + 520_000],
        ["produce", *keyed, "--count", 60, "--batch", 6, "--keys", 50, "--txn", "commit",
         "--codec", "zstd", "--base-ts", base + 600_000],
        ["produce", *keyed, "--count", 200, "--batch", 5, "--keys", 61, "--codec", "lz4",
         "--base-ts", base + 700_000],
        ["create-topic", LM_LIVE],
        ["produce", LM_LIVE, "--count", 30, "--batch", 10, "--base-ts", base],
    ]


# The Admin API's other changes, a share group and a SCRAM user (admin_commands), for the cluster
# image replayed from __cluster_metadata and for __share_group_state. The last command,
# describe-all, is the Admin API's view of the cluster at the end, which conftest.py keeps in
# the broker's directory (ADMIN_ANSWERS_FILE).
ADMIN_CONFIGS, ADMIN_GROWN, ADMIN_DELETED = "admin-configs", "admin-grown", "admin-deleted"
ADMIN_CONFIGS_FIRST = {"retention.ms": "86400000", "retention.bytes": "1048576",
                       "cleanup.policy": "compact,delete", "max.message.bytes": "200000"}
ADMIN_CONFIGS_CHANGED = {"retention.ms": "172800000", "retention.bytes": "2097152",
                         "cleanup.policy": "delete"}
ADMIN_CONFIGS_DELETED = ("max.message.bytes",)
# a cluster-wide default (the broker resource with no name); topics show it as
# DYNAMIC_DEFAULT_BROKER_CONFIG. More permissive than the default (1 h): it refuses nothing.
CLUSTER_DEFAULT = {"log.message.timestamp.after.max.ms": "86400000"}
# A password-type config of broker 1 (per broker: listener configs may not be cluster-wide);
# its value is a secret that no file of a test should print as is.
SENSITIVE_CONFIG = ("broker:1", "listener.name.plaintext.ssl.key.password",
                    "segmentlog-7f3a-sensitive-secret")
SCRAM_USER = "segmentlog-user"
SCRAM_CREDENTIALS = (("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 4096))
SHARE_TOPIC, SHARE_GROUP, SHARE_RECORDS, SHARE_REJECT_EVERY = "share-in", "share-group", 40, 7
ADMIN_ANSWERS_FILE = "admin-answers.json"


def _sets(configs: dict[str, str]) -> list[str]:
    return [word for k, v in configs.items() for word in ("--set", f"{k}={v}")]


def admin_commands(base: int) -> list[list]:
    resource, name, secret = SENSITIVE_CONFIG
    return [
        ["create-topic", ADMIN_CONFIGS, "--partitions", 2, "--config", "retention.ms=3600000"],
        ["alter-configs", f"topic:{ADMIN_CONFIGS}", *_sets(ADMIN_CONFIGS_FIRST)],
        ["alter-configs", f"topic:{ADMIN_CONFIGS}", *_sets(ADMIN_CONFIGS_CHANGED),
         *(w for c in ADMIN_CONFIGS_DELETED for w in ("--delete", c))],
        ["alter-configs", "broker-default", *_sets(CLUSTER_DEFAULT)],
        ["alter-configs", resource, "--set", f"{name}={secret}"],
        ["create-topic", ADMIN_GROWN],
        ["produce", ADMIN_GROWN, "--count", 10, "--base-ts", base],
        ["create-partitions", ADMIN_GROWN, "--total", 3],
        ["produce", ADMIN_GROWN, "--partitions", 3, "--count", 9, "--prefix", "grown",
         "--base-ts", base],
        ["create-topic", ADMIN_DELETED, "--partitions", 2],
        ["produce", ADMIN_DELETED, "--partitions", 2, "--count", 6, "--base-ts", base],
        ["delete-topic", ADMIN_DELETED],
        *(["scram-user", SCRAM_USER, "--password", f"{SCRAM_USER}-{mechanism}",
           "--mechanism", mechanism, "--iterations", iterations]
          for mechanism, iterations in SCRAM_CREDENTIALS),
        ["create-topic", SHARE_TOPIC, "--partitions", 2],
        ["produce", SHARE_TOPIC, "--partitions", 2, "--count", SHARE_RECORDS, "--batch", 5,
         "--base-ts", base],
        # a share group starts at the latest offset unless its group config says otherwise
        ["alter-configs", f"group:{SHARE_GROUP}", "--set", "share.auto.offset.reset=earliest"],
        ["share-consume", SHARE_TOPIC, "--group", SHARE_GROUP, "--count", SHARE_RECORDS,
         "--reject-every", SHARE_REJECT_EVERY],
        ["describe-all"],
    ]


def codec_timestamp(base: int, i: int, late_every: int = 7) -> int:
    """The CreateTime of record i of a produce with --late-every (KafkaClient.record)."""
    if late_every and i % late_every == late_every - 1:
        return base + (i - 3) * STEP_MS - 1
    return base + i * STEP_MS


@dataclass(frozen=True)
class ReadCase:
    """One read, with the same options on both sides, plus each side's own spelling of an
    option they name differently."""

    name: str
    options: dict
    kafka_only: dict = field(default_factory=dict)
    segmentlog_only: dict = field(default_factory=dict)


def read_cases(base: int) -> list[ReadCase]:
    committed = ({"kafka.isolation.level": "read_committed"},
                 {"isolationLevel": "read_committed"})
    by_ts = {"codec-none": {"0": codec_timestamp(base, 40) + 500},
             "multi": {"0": base + 30 * STEP_MS, "1": codec_timestamp(base, 64), "2": base}}
    until_ts = {"codec-none": {"0": base + 200 * STEP_MS},
                "multi": {"0": base + 100 * STEP_MS, "1": base + 10**9, "2": base + 149 * STEP_MS}}
    return [
        ReadCase("every-codec", {"subscribePattern": "codec-.*", "includeHeaders": "true"}),
        ReadCase("without-headers", {"subscribe": "codec-gzip,codec-lz4"}),
        ReadCase("offsets-json", {
            "assign": json.dumps({"multi": [0, 1, 2]}), "includeHeaders": "true",
            "startingOffsets": json.dumps({"multi": {"0": 3, "1": -2, "2": 10}}),
            "endingOffsets": json.dumps({"multi": {"0": 20, "1": -1, "2": 25}})}),
        ReadCase("earliest-latest", {"subscribe": "multi", "startingOffsets": "earliest",
                                     "endingOffsets": "latest"}),
        ReadCase("offsets-by-timestamp", {
            "subscribe": "codec-none,multi", "includeHeaders": "true",
            "startingOffsetsByTimestamp": json.dumps(by_ts),
            "endingOffsetsByTimestamp": json.dumps(until_ts)}),
        ReadCase("timestamps", {"subscribe": "codec-snappy,codec-zstd",
                                "startingTimestamp": str(base + 50 * STEP_MS),
                                "endingTimestamp": str(codec_timestamp(base, 181))}),
        ReadCase("timestamp-after-the-end", {
            "subscribe": "codec-lz4",
            "startingOffsetsByTimestamp": json.dumps({"codec-lz4": {"0": base + 10**9}}),
            "startingOffsetsByTimestampStrategy": "latest"}),
        ReadCase("log-append-time", {"subscribe": "lat", "includeHeaders": "true"}),
        ReadCase("read-uncommitted", {"subscribe": "txn", "includeHeaders": "true"}),
        ReadCase("read-committed", {"subscribe": "txn", "includeHeaders": "true"}, *committed),
        ReadCase("read-committed-offsets", {
            "assign": json.dumps({"txn": [0, 1]}),
            "startingOffsets": json.dumps({"txn": {"0": 9, "1": -2}}),
            "endingOffsets": json.dumps({"txn": {"0": -1, "1": 20}})}, *committed),
    ]
