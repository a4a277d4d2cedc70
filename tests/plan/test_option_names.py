"""Option names, before values: honoured, ignored (named in one warning) or refused with the
closest known names. Spark hands option names over in lower case, so these tests do too where
it matters. (The same rules through Spark, with rows: tests/spark/test_option_cases.py.)"""

from __future__ import annotations

import pytest

from segmentlog_source.errors import BadOptionError
from segmentlog_source.plan import kafka_options
from segmentlog_source.plan.option_names import (BROKER_ONLY_READ, READ, WRITE, ignored_warning,
                                                 screen)
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.write_options import parse_write_options


def read(**options):
    return parse_read_options({"path": "/logs", **options})


def write(**options):
    return parse_write_options({"path": "/logs", **options})


def test_every_documented_name_passes_in_any_case():
    for name in (*READ, *BROKER_ONLY_READ):
        assert name.lower() in screen({name.upper(): "x"}, "read").options
    for name in WRITE:
        assert name.lower() in screen({name.upper(): "x"}, "write").options


@pytest.mark.parametrize("given, suggested", [
    ("subscrbe", "subscribe"),
    ("startingoffset", "startingOffsets"),
    ("failondatalos", "failOnDataLoss"),
    ("maxrecordsperpartiton", "maxRecordsPerPartition"),
    ("kafka.isolation.levl", "kafka.isolation.level"),
    ("kafka.bootstrap.server", "kafka.bootstrap.servers"),
])
def test_a_misspelt_read_option_is_refused_with_the_closest_names(given, suggested):
    # Spark's Kafka source ignores names it does not know (KafkaSourceProvider.scala:793-799
    # passes kafka.* on unchecked; others are never looked at): here a typo cannot change rows
    with pytest.raises(BadOptionError) as err:
        read(**{given: "secret-value"})
    first = str(err.value).splitlines()[0]
    assert err.value.name == given and f"did you mean {suggested}" in first
    assert "secret-value" not in str(err.value)       # an unknown value may be a secret
    assert len(first) < 200


def test_a_misspelt_write_option_and_options_of_the_other_kind():
    with pytest.raises(BadOptionError, match="did you mean numPartitions"):
        write(numpartition="3")
    with pytest.raises(BadOptionError, match="a read option, not a write option"):
        write(failondataloss="false")
    with pytest.raises(BadOptionError, match="a write option, not a read option: select topics"):
        read(topic="orders")


def test_kafka_isolation_level_is_honoured_and_checked_against_isolation_level():
    assert read(**{"kafka.isolation.level": "read_committed"}).read_committed
    assert read(isolationLevel="READ_COMMITTED",
                **{"kafka.isolation.level": "read_committed"}).read_committed
    # Kafka's consumer takes its values in lower case only (ConfigDef.ValidString.in); so does
    # the kafka. spelling here, while segmentlog's own option takes any case
    with pytest.raises(BadOptionError, match="lower case") as err:
        read(**{"kafka.isolation.level": "READ_COMMITTED"})
    assert err.value.name == "kafka.isolation.level"
    with pytest.raises(BadOptionError, match="lower case"):
        write(topic="t", **{"kafka.compression.type": "LZ4"})
    with pytest.raises(BadOptionError, match="conflicts with kafka.isolation.level") as err:
        read(isolationLevel="read_committed", **{"kafka.isolation.level": "read_uncommitted"})
    assert err.value.name == "isolationLevel"
    with pytest.raises(BadOptionError) as err:      # named as given, not as segmentlog's name
        read(**{"kafka.isolation.level": "snapshot"})
    assert err.value.name == "kafka.isolation.level"
    assert not read(**{"kafka.check.crcs": "false"}).verify_checksums


@pytest.mark.parametrize("name", ["kafka.auto.offset.reset", "kafka.key.deserializer",
                                  "kafka.value.deserializer", "kafka.enable.auto.commit",
                                  "kafka.interceptor.classes"])
def test_consumer_settings_spark_refuses_are_refused(name):
    # KafkaSourceProvider.scala:295-332
    with pytest.raises(BadOptionError, match="not supported") as err:
        read(**{name: "x"})
    assert err.value.name == name


def test_connection_and_broker_only_options_are_ignored_and_named_once():
    o = read(**{"kafka.bootstrap.servers": "b:9092", "kafka.sasl.jaas.config": "secret",
                "kafka.ssl.truststore.location": "/x", "kafka.group.id": "g",
                "maxOffsetsPerTrigger": "5", "fetchOffset.numRetries": "3"})
    assert set(o.ignored) == {"kafka.bootstrap.servers", "kafka.sasl.jaas.config",
                              "kafka.ssl.truststore.location", "kafka.group.id",
                              "maxOffsetsPerTrigger", "fetchOffset.numRetries"}
    warning = ignored_warning(o.ignored)
    assert "secret" not in warning and all(n in warning for n in o.ignored)
    assert ignored_warning(read().ignored) is None


def test_min_offsets_per_trigger_above_max_is_refused_as_in_spark():
    # ignored in a batch read, yet Spark checks it (KafkaSourceProvider.scala:340-347)
    with pytest.raises(BadOptionError, match="minOffsetsPerTrigger"):
        read(minOffsetsPerTrigger="20", maxOffsetsPerTrigger="10")
    assert read(minOffsetsPerTrigger="5", maxOffsetsPerTrigger="10").ignored


def test_producer_settings_of_sparks_sink():
    o = write(**{"kafka.compression.type": "zstd", "kafka.compression.zstd.level": "7",
                 "kafka.batch.size": "1000", "kafka.linger.ms": "5", "kafka.acks": "all"})
    assert (o.codec, o.compression_level, o.batch_bytes) == (4, 7, 1000)
    assert set(o.ignored) == {"kafka.linger.ms", "kafka.acks"}
    # a level for another codec is checked, not used; gzip's -1 is its default
    assert write(compression="lz4", **{"compression.zstd.level": "3"}).compression_level is None
    assert write(compression="gzip", **{"compression.gzip.level": "-1"}).compression_level is None
    for name, value in (("kafka.compression.gzip.level", "0"),
                        ("kafka.compression.lz4.level", "18"),
                        ("kafka.compression.zstd.level", "23")):
        with pytest.raises(BadOptionError) as err:
            write(**{name: value})
        assert err.value.name == name
    with pytest.raises(BadOptionError, match="conflicts with"):
        write(**{"batch.size": "1000", "kafka.batch.size": "2000"})


@pytest.mark.parametrize("name", ["kafka.key.serializer", "kafka.value.serializer",
                                  "kafka.transactional.id", "kafka.partitioner.class",
                                  "kafka.interceptor.classes"])
def test_producer_settings_that_would_change_the_data_are_refused(name):
    # serializers: KafkaSourceProvider.scala:773-783; the rest change routing or batches
    with pytest.raises(BadOptionError, match="not supported") as err:
        write(**{name: "x"})
    assert err.value.name == name


def test_every_kafka_name_has_one_treatment():
    for kind in ("read", "write"):
        for name in kafka_options.known_names(kind):
            short = name[len(kafka_options.PREFIX):]
            assert kafka_options.classify(short, kind)[0] in ("mapped", "ignored", "refused")
    assert kafka_options.classify("no.such.setting", "read") == ("unknown", None)


def test_each_case_of_the_option_table_warns_of_exactly_its_ignored_options():
    """The names in the one warning, for every set of tests/spark/option_cases.py that is not
    refused (through Spark, test_option_cases.py checks that the warning is given, once)."""
    from tests.spark.option_cases import READ_CASES, WRITE_CASES, Error

    for case in READ_CASES:
        if not isinstance(case.outcome, Error):
            assert read(**case.options).ignored == tuple(sorted(case.warned)), case.id
    for case in WRITE_CASES:
        if not isinstance(case.outcome, Error):
            assert write(**case.options).ignored == tuple(sorted(case.warned)), case.id
