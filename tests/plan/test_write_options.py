"""Writer options: Kafka's names and defaults, and a BadOptionError naming each bad one."""

from __future__ import annotations

import pytest

from segmentlog_source.errors import BadOptionError
from segmentlog_source.plan.write_options import parse_write_options


def test_defaults_are_the_producer_and_topic_defaults():
    o = parse_write_options({"path": "/d"})
    assert (o.codec, o.batch_bytes, o.max_records_per_batch, o.log_append_time, o.fsync) == \
        (0, 16384, None, False, "commit")
    assert (o.num_partitions, o.partitions_for_new_topic, o.topic) == (None, 1, None)
    c = o.log_config
    assert (c.segment_bytes, c.segment_ms, c.segment_index_bytes, c.index_interval_bytes,
            c.fsync) == (1073741824, 604800000, 10485760, 4096, "close")


def test_options_are_case_insensitive_and_mapped():
    o = parse_write_options({"PATH": "/d", "topic": "t.1_x-y", "Compression": "ZSTD",
                             "segment.bytes": "1000", "segment.ms": "5",
                             "index.interval.bytes": "0",
                             "segment.index.bytes": "240", "batch.size": "100",
                             "maxRecordsPerBatch": "7", "timestampType": "logAppendTime",
                             "fsync": "batch", "numPartitions": "12"})
    assert (o.topic, o.codec, o.batch_bytes, o.max_records_per_batch, o.log_append_time,
            o.num_partitions) == ("t.1_x-y", 4, 100, 7, True, 12)
    assert (o.log_config.segment_bytes, o.log_config.segment_ms,
            o.log_config.index_interval_bytes, o.log_config.segment_index_bytes,
            o.log_config.fsync) == (1000, 5, 0, 240, "always")
    assert parse_write_options({"path": "/d", "compression.type": "lz4"}).codec == 3


@pytest.mark.parametrize("options, name", [
    ({}, "path"),
    ({"compression": "brotli"}, "compression"),
    ({"compression.type": "lzma"}, "compression.type"),
    ({"compression": "gzip", "compression.type": "lz4"}, "compression"),
    ({"segment.bytes": "10"}, "segment.bytes"),
    ({"segment.bytes": "big"}, "segment.bytes"),
    ({"segment.ms": "0"}, "segment.ms"),
    ({"segment.index.bytes": "12"}, "segment.index.bytes"),
    ({"index.interval.bytes": "-1"}, "index.interval.bytes"),
    ({"batch.size": "0"}, "batch.size"),
    ({"maxRecordsPerBatch": "-3"}, "maxRecordsPerBatch"),
    ({"timestampType": "EventTime"}, "timestampType"),
    ({"fsync": "always"}, "fsync"),
    ({"numPartitions": "0"}, "numPartitions"),
    ({"numPartitions": str(2**31)}, "numPartitions"),
    ({"numPartitions": "1000000"}, "numPartitions"),   # a directory each: bounded
    ({"batch.size": str(2**30)}, "batch.size"),        # over what readers take as a batch
    ({"segment.bytes": str(2**31)}, "segment.bytes"),
    ({"maxRecordsPerBatch": str(2**31)}, "maxRecordsPerBatch"),
    ({"lockTimeoutMs": str(10**12)}, "lockTimeoutMs"),
    ({"topic": "a/b"}, "topic"),
    ({"topic": ".."}, "topic"),
    ({"topic": "x" * 250}, "topic"),
    ({"lockTimeoutMs": "soon"}, "lockTimeoutMs"),
])
def test_a_bad_option_is_named(options, name):
    given = {"path": "/d", **options} if options else {}
    with pytest.raises(BadOptionError) as err:
        parse_write_options(given)
    assert err.value.name == name
