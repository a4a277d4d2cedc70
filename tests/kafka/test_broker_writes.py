"""What the broker writes, segmentlog reads: a Kafka 4.4 broker is given records with every codec,
keys, headers, CreateTime and LogAppendTime, committed and aborted transactions (one KafkaClient
run, broker_topics.py). Spark's own Kafka source reads them from the broker; segmentlog reads the
broker's log directory, while the broker runs and after it stopped. Same rows, same schema, for
each ReadCase: every codec, offsets as JSON, offsets and timestamps by timestamp, headers on and
off, read_uncommitted and read_committed.
"""

from __future__ import annotations

from collections import Counter

import pytest
from chispa import assert_df_equality
from chispa.dataframe_comparer import DataFramesNotEqualError

from tests.kafka.broker_topics import CODECS, read_cases

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]

CASES = [case.name for case in read_cases(0)]


def _df(spark, rows, schema):
    return spark.createDataFrame(rows, schema)


def _assert_same_read(spark, kafka, segmentlog, where: str) -> None:
    assert kafka.error is None, f"format('kafka') failed: {kafka.error}"
    assert segmentlog.error is None, f"format('segmentlog') failed ({where}): {segmentlog.error}"
    assert segmentlog.schema == kafka.schema
    ours = segmentlog.rows
    try:
        assert_df_equality(_df(spark, ours, segmentlog.schema),
                           _df(spark, kafka.rows, kafka.schema))
    except DataFramesNotEqualError as err:   # chispa's table is wide: say what differs first
        raise AssertionError(f"segmentlog ({where}) and format('kafka') differ: "
                             f"{_summary(ours, kafka.rows)}") from err


def _summary(ours: list, theirs: list) -> str:
    if len(ours) != len(theirs):
        return f"{len(ours)} rows against {len(theirs)}"
    differing = [(a, b) for a, b in zip(ours, theirs) if a != b]
    columns = Counter(name for a, b in differing for name in a.asDict() if a[name] != b[name])
    a, b = differing[0]
    first = {name: (a[name], b[name]) for name in columns if a[name] != b[name]}
    return (f"{len(differing)} of {len(ours)} rows, in columns {dict(columns)}; first at "
            f"{a.topic}-{a.partition} offset {a.offset}: (segmentlog, kafka) = {first}")


@pytest.mark.parametrize("case", CASES)
def test_segmentlog_reads_the_running_broker_as_spark_reads_the_broker(kafka_spark, broker_reads,
                                                                       case):
    _assert_same_read(kafka_spark, broker_reads.kafka[case], broker_reads.live[case],
                      "broker running")


@pytest.mark.parametrize("case", CASES)
def test_segmentlog_reads_the_stopped_broker_as_spark_read_the_broker(kafka_spark, broker_reads,
                                                                      case):
    _assert_same_read(kafka_spark, broker_reads.kafka[case], broker_reads.stopped[case],
                      "broker stopped")


def test_the_reads_cover_what_they_claim(broker_reads, produced):
    """The comparisons above are only as good as what the broker holds: check it has it all."""
    kafka = {name: read.rows for name, read in broker_reads.kafka.items()}
    every = kafka["every-codec"]
    assert {r.topic for r in every} == {f"codec-{c}" for c in CODECS}
    assert len(every) == 240 * len(CODECS)
    assert any(r.key is None for r in every) and any(r.value is None for r in every)
    assert any(r.headers is None for r in every)
    assert any(h.value is None for r in every for h in r.headers or ())
    offsets = [r.offset for r in every if r.topic == "codec-none"]
    stamps = [r.timestamp for r in every if r.topic == "codec-none"]
    assert offsets == list(range(240)) and stamps != sorted(stamps)   # CreateTime out of order
    assert {r.timestampType for r in kafka["log-append-time"]} == {1}
    uncommitted, committed = kafka["read-uncommitted"], kafka["read-committed"]
    aborted = {(r.partition, r.offset) for r in uncommitted} - {(r.partition, r.offset)
                                                                for r in committed}
    assert len(aborted) == 10 + 8 and all(  # "abort" and "interleave" in produce_commands
        r.value.startswith((b"a1-", b"interleaved-aborted"))
        for r in uncommitted if (r.partition, r.offset) in aborted and r.value is not None)
    assert kafka["timestamp-after-the-end"] == []
    assert 0 < len(kafka["offsets-by-timestamp"]) < 240 + 150
    # several segments per partition, so reads crossed segment boundaries
    files = broker_reads.files
    assert len(list((files / "codec-none-0").glob("*.log"))) >= 5
    assert len(list((files / "multi-1").glob("*.log"))) >= 2
    assert any((files / "txn-0").glob("*.txnindex"))


def test_the_running_broker_had_preallocated_indexes(broker_reads):
    """The live reads above went through active segments whose indexes the broker preallocated
    (10 MiB of zeros after the entries), which it trims only when it rolls or stops."""
    for part in broker_reads.active_copies.iterdir():
        index = next(part.glob("*.index"))
        assert index.stat().st_size == 10 * 1024 * 1024
        assert index.stat().st_size > (broker_reads.files / part.name / index.name).stat().st_size


def test_records_without_headers_are_null_as_in_sparks_kafka_source(broker_reads):
    """Spark's Kafka source gives `headers` NULL for a record without headers (its row converter
    puts null when the header iterator is empty), never []; segmentlog gives the same, on the
    same records, so a ported `WHERE headers IS NULL` keeps its meaning."""
    ours, theirs = broker_reads.stopped["every-codec"].rows, broker_reads.kafka["every-codec"].rows
    none = {(r.topic, r.offset) for r in ours if r.headers is None}
    assert none and all(r.headers != [] for r in ours)
    assert {(r.topic, r.offset) for r in theirs if r.headers is None} == none