"""The stream reader driven as PySpark's streaming runner drives it (offsets through JSON, each
InputPartition pickled), over logs that grow between triggers: every record once, in order,
micro-batches that read the bytes appended since the last one, Spark's Kafka source's offsets,
limits and triggers. (test_stream_query.py runs real streaming queries.)"""

from __future__ import annotations

import shutil

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from segmentlog_source.errors import BadOptionError, DataLossError
from segmentlog_source.plan.stream_options import parse_stream_options
from tests.spark.stream_logs import GrowingLog, Stream


def _offsets(rows):
    return [r[2] for r in rows]


def test_offsets_are_the_kafka_sources_json_and_a_stream_starts_at_latest(tmp_path):
    log = GrowingLog(tmp_path)
    log.append(10)
    latest = Stream(tmp_path)
    assert latest.offset == {"t": {"0": 10}}
    assert Stream(tmp_path, startingOffsets="earliest").offset == {"t": {"0": 0}}
    assert Stream(tmp_path, startingOffsets='{"t":{"0":4}}').offset == {"t": {"0": 4}}
    assert Stream(tmp_path, startingTimestamp=str(1_700_000_000_006)).offset == {"t": {"0": 6}}
    assert latest.trigger() is None              # nothing new
    log.append(5)
    assert _offsets(latest.trigger()) == list(range(10, 15))


def test_every_record_once_in_order_across_rolls_reading_only_what_was_appended(tmp_path):
    log = GrowingLog(tmp_path, segment_bytes=1024)
    log.append(20)
    stream = Stream(tmp_path, startingOffsets="earliest")
    seen, read_up_to, expected_bytes = [], 0, []
    for step in range(40):
        size = log.size()
        rows = stream.trigger()
        if rows:
            seen += _offsets(rows)
            expected_bytes.append(size - read_up_to)
            read_up_to = size
        for _ in range(step % 4):
            log.append(1 + step % 7)
    seen += _offsets(stream.trigger())
    expected_bytes.append(log.size() - read_up_to)
    assert seen == list(range(log.log.log_end_offset))
    assert len(list(log.path.glob("*.log"))) >= 5, "segments must have rolled"
    # each micro-batch planned exactly the bytes appended since the one before: no re-scan
    assert stream.planned_bytes == expected_bytes


def test_max_offsets_per_trigger_caps_every_micro_batch(tmp_path):
    logs = [GrowingLog(tmp_path, partition=p) for p in range(3)]
    for p, log in enumerate(logs):
        log.append(40 * (p + 1))
    stream = Stream(tmp_path, startingOffsets="earliest", maxOffsetsPerTrigger=25)
    assert stream.reader.getDefaultReadLimit() == ReadMaxRows(25)
    seen, batches = [], 0
    while (rows := stream.trigger()) is not None:
        assert len(rows) <= 25
        seen += [(r[1], r[2]) for r in rows]
        batches += 1
    assert sorted(seen) == [(p, o) for p in range(3) for o in range(40 * (p + 1))]
    assert batches == 240 // 25 + 1
    # the engine's ReadAllAvailable (as for a final batch) overrides the option
    logs[0].append(100)
    assert len(stream.trigger(ReadAllAvailable())) == 100


def test_min_offsets_per_trigger_waits_up_to_max_trigger_delay(tmp_path):
    log = GrowingLog(tmp_path)
    stream = Stream(tmp_path, minOffsetsPerTrigger=10, maxTriggerDelay="1h")
    log.append(4)
    assert stream.trigger() is None                       # 4 < 10: wait
    log.append(6)
    assert _offsets(stream.trigger()) == list(range(10))
    quick = Stream(tmp_path, minOffsetsPerTrigger=10, maxTriggerDelay="0ms")
    log.append(3)
    assert _offsets(quick.trigger()) == [10, 11, 12]      # the delay has passed


def test_available_now_stops_at_the_end_seen_when_it_started(tmp_path):
    log = GrowingLog(tmp_path)
    log.append(30)
    stream = Stream(tmp_path, startingOffsets="earliest", maxOffsetsPerTrigger=7)
    stream.reader.prepareForTriggerAvailableNow()
    seen = []
    while (rows := stream.trigger()) is not None:
        seen += _offsets(rows)
        log.append(2)                                     # later data is not for this run
    assert seen == list(range(30))


def test_subscribe_pattern_picks_up_a_topic_created_later_from_its_start(tmp_path):
    GrowingLog(tmp_path, topic="orders").append(5)
    stream = Stream(tmp_path, subscribePattern="ord.*", startingOffsets="earliest")
    assert len(stream.trigger()) == 5
    assert stream.trigger() is None
    later = GrowingLog(tmp_path, topic="orders-eu", partition=1)
    later.append(3)
    GrowingLog(tmp_path, topic="clicks").append(9)        # not subscribed
    assert [(r[0], r[1], r[2]) for r in stream.trigger()] == [("orders-eu", 1, o)
                                                              for o in range(3)]


def test_read_committed_holds_back_behind_an_open_transaction(tmp_path):
    log = GrowingLog(tmp_path)
    log.append(2)
    stream = Stream(tmp_path, startingOffsets="earliest", isolationLevel="read_committed")
    assert _offsets(stream.trigger()) == [0, 1]
    log.begin(producer_id=7, count=3)                     # 2..4, open
    log.append(2)                                         # 5..6, behind the open transaction
    assert stream.trigger() is None
    assert stream.offset == {"t": {"0": 2}}
    log.begin(producer_id=7, count=1)                     # 7, still open
    log.end(producer_id=7, commit=False)                  # 8: ABORT
    log.begin(producer_id=8, count=2)                     # 9..10
    log.end(producer_id=8, commit=True)                   # 11: COMMIT
    assert _offsets(stream.trigger()) == [5, 6, 9, 10]
    # read_uncommitted saw them all as they came
    assert len(Stream(tmp_path, startingOffsets="earliest").trigger()) == 10


def test_checkpointed_offsets_that_retention_deleted(tmp_path):
    log = GrowingLog(tmp_path, segment_bytes=1024)
    for _ in range(20):
        log.append(5)
    stream = Stream(tmp_path, startingOffsets="earliest")
    log.close()
    first = sorted(log.path.glob("*.log"))[0]
    for old in log.path.glob(first.stem + ".*"):
        old.unlink()                                      # as retention deletes a segment
    with pytest.raises(DataLossError, match="outside the log"):
        stream.trigger()
    lossy = Stream(tmp_path, startingOffsets='{"t":{"0":0}}', failOnDataLoss="false")
    rows = lossy.trigger()
    assert _offsets(rows) == list(range(_offsets(rows)[0], 100)) and _offsets(rows)[0] > 0


def test_a_partition_that_vanished(tmp_path):
    first, second = GrowingLog(tmp_path, partition=0), GrowingLog(tmp_path, partition=1)
    first.append(3)
    second.append(3)
    stream = Stream(tmp_path, startingOffsets="earliest")
    assert len(stream.trigger()) == 6
    second.append(2)
    second.close()
    shutil.rmtree(tmp_path / "t-1")                       # the topic's partition deleted
    first.append(1)
    assert _offsets(stream.trigger()) == [3]              # its offsets stay where they were
    stream.offset["t"]["1"] = 2                           # a checkpoint from before
    with pytest.raises(DataLossError, match="t-1"):
        stream.reader.partitions(stream.offset, {"t": {"0": 4, "1": 5}})


@pytest.mark.parametrize("options,name", [
    ({"endingOffsets": "latest"}, "endingOffsets"),
    ({"endingTimestamp": "5"}, "endingTimestamp"),
    ({"maxTriggerDelay": "soon"}, "maxTriggerDelay"),
    ({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger"),
    ({"minOffsetsPerTrigger": "9", "maxOffsetsPerTrigger": "3"}, "minOffsetsPerTrigger"),
    ({"maxOfsetsPerTrigger": "3"}, "maxOfsetsPerTrigger"),
])
def test_stream_options_refused_with_their_name(tmp_path, options, name):
    with pytest.raises(BadOptionError) as info:
        parse_stream_options({"path": str(tmp_path), **options})
    # (Spark hands option names over in lower case; so they come back)
    assert str(info.value).lower().startswith(f"option {name.lower()}")


def test_a_partition_directory_replaced_by_another_topics_log(tmp_path):
    """A topic deleted and re-created under the same name (or a restore of another cluster)
    brings another topic id in partition.metadata: its offsets are not the stream's."""
    import uuid

    from segmentlog_source.storage.log.checkpoints import write_partition_metadata

    log = GrowingLog(tmp_path)
    write_partition_metadata(str(log.path / "partition.metadata"), uuid.uuid4())
    log.append(5)
    stream = Stream(tmp_path, startingOffsets="earliest")
    lossy = Stream(tmp_path, startingOffsets="earliest", failOnDataLoss="false")
    assert len(stream.trigger()) == 5 and len(lossy.trigger()) == 5
    log.close()
    shutil.rmtree(log.path)
    again = GrowingLog(tmp_path)
    write_partition_metadata(str(again.path / "partition.metadata"), uuid.uuid4())
    again.append(8)
    with pytest.raises(DataLossError, match="replaced by another log"):
        stream.trigger()
    # failOnDataLoss=false: on from the offsets the stream had (a warning says why)
    assert _offsets(lossy.trigger()) == [5, 6, 7]


def test_a_stream_over_a_directory_with_no_partition_yet_waits_for_one(tmp_path):
    stream = Stream(tmp_path, startingOffsets="earliest")
    assert stream.offset == {} and stream.trigger() is None
    GrowingLog(tmp_path, topic="late").append(4)
    assert _offsets(stream.trigger()) == [0, 1, 2, 3]
    with pytest.raises(Exception, match="no such file or directory"):
        Stream(tmp_path / "missing")


@pytest.mark.parametrize("offsets", [
    {"t": {"0": -2}},                 # would mean "earliest" to the planner
    {"t": {"0": -1}},
    {"t": {"0": "12"}},
    {"t": {"0": True}},
    {"t": {"x": 3}},
    {"t": 4},
    {"t": {"0": 1.5}},
])
def test_offsets_that_are_no_kafka_offsets_are_refused(tmp_path, offsets):
    """What Spark hands back comes from the checkpoint, which a person may have edited."""
    GrowingLog(tmp_path).append(5)
    stream = Stream(tmp_path, startingOffsets="earliest")
    with pytest.raises(BadOptionError, match="checkpointLocation"):
        stream.reader.latestOffset(offsets, stream.reader.getDefaultReadLimit())
    with pytest.raises(BadOptionError, match="checkpointLocation"):
        stream.reader.partitions(offsets, {"t": {"0": 5}})
