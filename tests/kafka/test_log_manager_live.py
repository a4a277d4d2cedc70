"""segmentlog's log manager against a real Kafka 4.4 broker (log_manager_live.py has the
procedure and why the broker's own cleaner and retention leave the observed topics alone).

1. A broker started on a data directory whose placed topics segmentlog's LogManager retained
   and compacted there loads them, with and without the clean-shutdown marker, at the log start
   and end offsets segmentlog's PartitionLog gives; it truncates nothing, recovers nothing from
   corruption, sets nothing aside as stray; a consumer (Spark's Kafka source) reads exactly the
   rows format('segmentlog') reads from the same directory.
2. A topic compacted by the broker's cleaner and the same files compacted by segmentlog keep the
   same newest value for every key. What may differ, and here does not: the cleanable range
   (each side's cleaner-offset-checkpoint; both stop at the active segment here, so both must
   give the same offset); tombstones (a side past the horizon may have removed one: the key is
   then absent instead of a tombstone; delete.retention.ms is a day here, so both keep them).
   segmentlog cleans at the broker's cleaning time (read from the horizon the broker wrote),
   so everything, batch for batch and index for index, horizons and CRCs too, must be the same.
3. LogManager pointed at a running broker's data directory refuses, as the broker holds its
   `.lock`, and changes none of the broker's files.
"""

from __future__ import annotations

import pytest

from tests.kafka.adoption import REFUSALS
from tests.kafka.broker_topics import LM_RETENTION_MS
from tests.kafka.log_manager_live import (KEYED_DIR, KEYED_OVERRIDES, PARTITIONS, ROUNDS,
                                          aborted_producers, newest_values, offset_problems,
                                          view_problems)

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]

def test_log_manager_retained_and_compacted_the_placed_topics(log_manager_live):
    """The comparisons below are about real work: retention deleted the 6 h old segments of
    lm-delete-*, compaction removed records of lm-compact-*, and neither moved the log end."""
    for round_ in log_manager_live.rounds.values():
        for p in range(PARTITIONS):
            start, end = round_.offsets[round_.delete_topic][p]
            assert end == log_manager_live.source_offsets[p]
            (retained,) = [r for r in round_.retained[round_.delete_topic] if r.partition == p]
            assert retained.deleted and start == retained.log_start_offset > 0
            assert {reason for _, reason in retained.deleted} == {f"retention.ms={LM_RETENTION_MS}"}
            assert round_.offsets[round_.compact_topic][p] == (0, end)
            (cleaned,) = round_.compacted[p].passes
            assert cleaned.records_kept < cleaned.records_read and cleaned.segments_written
            assert round_.checkpoints_before["cleaner-offset-checkpoint"][
                (round_.compact_topic, p)] == cleaned.end_offset == cleaned.first_uncleanable
        served = round_.served[round_.compact_topic].read
        assert served.error is None, served.error
        assert any(r.value is None for r in served.rows), "the compacted topic keeps tombstones"


def test_at_the_brokers_stale_high_watermark_log_manager_changes_nothing(log_manager_live):
    """The placed files' records are above the high watermark the broker checkpointed for the
    empty topic (0): segmentlog neither deletes nor cleans there."""
    stale = log_manager_live.rounds["marker"].stale_hw
    assert set(stale["hw"].values()) == {0} and len(stale["hw"]) == 2 * PARTITIONS
    assert [r.deleted for r in stale["retained"]] == [[]] * PARTITIONS
    assert [[(c.first_dirty, c.first_uncleanable, c.segments_read) for c in part.passes]
            for part in stale["compacted"]] == [[(0, 0, 0)]] * PARTITIONS


@pytest.mark.parametrize("round_", ROUNDS)
def test_the_broker_loads_what_log_manager_left(log_manager_live, round_):
    found = log_manager_live.rounds[round_]
    assert offset_problems(found) == []
    for topic in found.topics:
        served = found.served[topic]
        assert served.read.rows and served.stray == []
        assert [line for line in served.log
                if any(word in line.lower() for word in REFUSALS)] == []


@pytest.mark.parametrize("round_", ROUNDS)
def test_the_brokers_own_upkeep_left_the_topics_alone(log_manager_live, round_):
    """What was observed is what segmentlog left: the broker rewrote no `.log` file, cleaned
    nothing and kept segmentlog's cleaner-offset-checkpoint entries."""
    found = log_manager_live.rounds[round_]
    assert found.logs_after == found.logs_before
    assert {name: lines for name, lines in found.cleaner_lines.items()
            if name != KEYED_DIR and lines} == {}
    assert found.cleaner_after == found.checkpoints_before["cleaner-offset-checkpoint"]
    if round_ == "marker":   # the same search finds the cleaning it did do, of lm-keyed
        assert any("Cleaning LogSegment" in line for line in found.cleaner_lines[KEYED_DIR])


def test_without_the_marker_the_broker_recovers_from_segmentlogs_recovery_point(
        log_manager_live):
    """LogManager checkpoints the log end offset as the recovery point: a broker starting
    without the marker recovers only the last segment of each partition (the one holding it),
    and with the marker nothing."""
    for name, round_ in log_manager_live.rounds.items():
        for topic in round_.topics:
            recovered = round_.recovered[topic]
            if name == "marker":
                assert recovered == []
            else:
                assert len(recovered) == PARTITIONS, recovered
                assert round_.checkpoints_before["recovery-point-offset-checkpoint"] == {
                    (t, p): round_.offsets[t][p][1] for t in round_.topics
                    for p in range(PARTITIONS)}


def test_log_manager_leaves_no_folder_in_the_brokers_data_directory(log_manager_live):
    """A broker refuses unknown directories in its data directory: LogManager, given its
    configs as overrides, creates none (no `_segmentlog`). What it leaves: the data directory's
    `.lock` (the broker's own lock file, which a stopped broker has deleted and a starting one
    takes again) and one `.segmentlog.lock` per partition directory, which the broker loads
    past (the round tests see no refusal)."""
    for round_ in log_manager_live.rounds.values():
        assert round_.foreign == [".lock"] + sorted(
            f"{t}-{p}/.segmentlog.lock" for t in round_.topics for p in range(PARTITIONS))


def test_log_manager_refuses_a_running_brokers_data_directory(log_manager_live):
    """Its data-directory `.lock` is the broker's own: while the broker holds it, LogManager
    must refuse (LogLockedError) before changing any file of the broker's partitions (an empty
    `.segmentlog.lock` of its own aside)."""
    outcome, changed = log_manager_live.rounds["marker"].on_running_broker
    changed = [name for name in changed if not name.startswith(".segmentlog.lock:")]
    assert (outcome.split(":")[0], changed) == ("LogLockedError", []), (outcome, changed)


def _cleaned(log_manager_live):
    cleaning = log_manager_live.cleaning
    assert cleaning.broker_checkpoint is not None, "the broker's cleaner never cleaned lm-keyed"
    error = cleaning.segmentlog_error
    assert error is None, f"segmentlog's LogManager.compact() failed on the copy: {error}"
    return cleaning


def test_the_brokers_cleaner_and_segmentlog_keep_the_same_newest_values(log_manager_live):
    cleaning = _cleaned(log_manager_live)
    before = newest_values(cleaning.before)
    broker, ours = newest_values(cleaning.broker), newest_values(cleaning.segmentlog)
    assert view_problems(broker, ours) == []
    # and cleaning changed no key's newest value
    assert view_problems(before, broker) == [] and view_problems(before, ours) == []
    assert any(v[2] is None for v in before.values()) and len(before) >= 60
    kept = sum(len(b.records) for b in cleaning.broker)
    assert kept < sum(len(b.records) for b in cleaning.before) / 3


def test_both_cleaners_cleaned_the_same_range(log_manager_live):
    cleaning = _cleaned(log_manager_live)
    result = cleaning.segmentlog_result.passes[-1]
    active = max(b.segment for b in cleaning.before)
    assert (result.first_dirty, result.first_uncleanable) == (0, active)
    assert cleaning.broker_checkpoint == result.end_offset == active, \
        f"broker cleaner-offset-checkpoint {cleaning.broker_checkpoint}, segmentlog {result}"


def test_both_cleaners_wrote_the_same_batches_and_indexes(log_manager_live):
    """Beyond the newest values: cleaning at the broker's cleaning time (one delete horizon,
    between lowering the ratio and seeing the checkpoint), segmentlog writes the same segments,
    batches (every header field, the horizon and CRC too), records and index files."""
    cleaning = _cleaned(log_manager_live)
    retention = int(KEYED_OVERRIDES["delete.retention.ms"])
    horizons = {b.horizon for b in cleaning.broker if b.horizon is not None}
    assert len(horizons) == 1, f"the broker's cleaner wrote horizons {sorted(horizons)}"
    assert cleaning.clock_ms == min(horizons) - retention
    assert cleaning.lowered_ms <= cleaning.clock_ms <= cleaning.seen_ms, cleaning
    shape = [(b.segment, b.exact, b.records) for b in cleaning.broker]
    assert [(b.segment, b.exact, b.records) for b in cleaning.segmentlog] == shape
    assert cleaning.index_differences == []


def test_both_cleaners_dropped_the_aborted_transaction_and_kept_the_markers(log_manager_live):
    """lm-keyed holds an aborted transaction whose values would otherwise be the newest of
    their keys: both cleaners drop its records and keep every transaction marker (the first
    cleaning of a marker whose transaction's batches it saw keeps it, without a horizon)."""
    cleaning = _cleaned(log_manager_live)
    aborted = aborted_producers(cleaning.before)
    assert aborted and all(b.horizon is None for b in cleaning.before)

    def aborted_records(found) -> int:
        return sum(len(b.records) for b in found
                   if b.header.producer_id in aborted and not b.header.is_control)

    def markers(found) -> list[tuple]:
        return [(b.header.producer_id, b.header.base_offset) for b in found
                if b.header.is_control]

    assert aborted_records(cleaning.before) > 0
    assert aborted_records(cleaning.broker) == aborted_records(cleaning.segmentlog) == 0
    assert markers(cleaning.broker) == markers(cleaning.segmentlog) == markers(cleaning.before)
