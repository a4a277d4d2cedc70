"""`segmentlog verify`: every fixture passes; each kind of damage is found, with file and byte."""

from __future__ import annotations

from pathlib import Path
import struct

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.cli.verify import verify_partition
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.cli.helpers import (break_first_record, client_case_as_partition, client_cases,
                               flip_byte, run_cli, writable_copy)
from tests.conftest import shared_fixture
from tests.fixture_inspect import parse_inspect
from tests.storage.helpers import real_id, real_partition_dirs

REAL_LOGS = [p for p in real_partition_dirs() if not p.name.startswith("__cluster_metadata")]
OFFSETS_28 = ("william0423-kafka", "__consumer_offsets-28")  # 254 index entries, clean shutdown


def _errors(report) -> list[tuple[str, int | None]]:
    return [(Path(p.path).name, p.position) for p in report.errors]


@pytest.mark.parametrize("path", REAL_LOGS, ids=real_id)
def test_real_partitions_pass(path):
    report = verify_partition(str(path))
    assert report.errors == []
    # The only warnings: index files the git snapshot could not keep (>= 4 MiB, see SOURCES.md).
    assert all("missing" in w.message for w in report.warnings)
    inspect = parse_inspect(path / "inspect.txt")
    assert report.batches == len(inspect.batches)
    assert report.records == sum(len(b.records) for b in inspect.batches)


@pytest.mark.parametrize("case", client_cases(), ids=lambda p: p.name)
def test_client_cases_pass(case, tmp_path):
    report = verify_partition(str(client_case_as_partition(case, tmp_path)))
    assert report.errors == []
    inspect = parse_inspect(case / "inspect.txt")
    assert (report.batches, report.records) == (len(inspect.batches),
                                                sum(len(b.records) for b in inspect.batches))


def test_console_script_over_real_data_dirs():
    data_dirs = sorted({p.parent for p in REAL_LOGS})
    result = run_cli("verify", *data_dirs)
    assert result.returncode == 0, result.stdout + result.stderr
    summaries = [line for line in result.stdout.splitlines() if not line.startswith("  ")]
    assert len(summaries) == len(REAL_LOGS) and all(s.startswith("ok ") for s in summaries)


# -- damage in the .log ------------------------------------------------------------------------

@pytest.fixture
def generated(tmp_path) -> Path:
    """A small multi-segment log with index entries and transactions, known to be clean."""
    generate_log(str(tmp_path / "data"), topics=["t"], records=3000, value_size=200,
                 segment_bytes=200_000, records_per_batch=20, transactions=True, seed=3)
    path = tmp_path / "data" / "t-0"
    assert verify_partition(str(path)).problems == []
    return path


def _batches(path: Path, segment_index: int):
    segment = PartitionLog.open(str(path)).segments[segment_index]
    return Path(segment.log_path), [h for h, _ in segment.iter_entries()]


def test_flipped_byte_is_a_crc_error(generated):
    log, batches = _batches(generated, 0)
    flip_byte(log, batches[5].position + 70)
    report = verify_partition(str(generated))
    assert _errors(report) == [(log.name, batches[5].position)]
    assert "CRC mismatch" in report.errors[0].message


def test_truncated_batch_is_a_torn_tail(generated):
    log, batches = _batches(generated, 1)
    with open(log, "r+b") as f:
        f.truncate(batches[-1].position + 30)
    report = verify_partition(str(generated))
    # a middle segment: its last batch's offsets are then missing before the next segment
    assert _errors(report) == [(log.name, batches[-1].position), (log.name, None)]
    assert "not a whole batch" in report.errors[0].message
    assert (f"offsets {batches[-1].base_offset}..{batches[-1].last_offset} are missing"
            in report.errors[1].message)


def test_garbage_at_the_end(generated):
    log, batches = _batches(generated, -1)
    with open(log, "ab") as f:
        f.write(b"garbage!" * 3)
    report = verify_partition(str(generated))
    assert _errors(report) == [(log.name, batches[-1].end)]


def test_console_script_names_file_and_byte(generated):
    log, batches = _batches(generated, 0)
    flip_byte(log, batches[2].position + 61)
    result = run_cli("verify", generated.parent)
    assert result.returncode == 1
    assert result.stdout.startswith(f"FAIL {generated}:")
    assert f"  error: {log} at byte {batches[2].position}: CRC mismatch" in result.stdout


def test_undecodable_records_behind_a_valid_crc(tmp_path):
    generate_log(str(tmp_path / "d"), records=500, value_size=50, records_per_batch=20)
    path = tmp_path / "d" / "events-0"
    log, batches = _batches(path, 0)
    break_first_record(log, batches[4].position)
    report = verify_partition(str(path))
    assert _errors(report) == [(log.name, batches[4].position)]
    assert report.errors[0].message.startswith("record 0 of the batch at offset 80")


def test_offsets_that_go_backwards(generated):
    log, batches = _batches(generated, 0)
    data = bytearray(log.read_bytes())
    struct.pack_into(">q", data, batches[3].position, batches[1].base_offset)  # not CRC-covered
    log.write_bytes(bytes(data))
    report = verify_partition(str(generated))
    assert (log.name, batches[3].position) in _errors(report)
    assert any("do not follow" in e.message for e in report.errors)


def test_txn_index_entry_without_its_marker(generated):
    txn_index = next(p for p in sorted(generated.glob("*.txnindex")) if p.stat().st_size)
    data = bytearray(txn_index.read_bytes())
    last, stable = struct.unpack_from(">qq", data, 18)
    # the marker's offset, minus one (and the last stable offset with it, which the marker bounds)
    struct.pack_into(">qq", data, 18, last - 1, min(stable, last))
    txn_index.write_bytes(bytes(data))
    report = verify_partition(str(generated))
    # the entry names no marker, and the marker it should name has no entry
    assert _errors(report) == [(txn_index.name, 0), (txn_index.name, None)]
    assert "no ABORT marker" in report.errors[0].message
    assert f"no entry for the ABORT marker at offset {last}" in report.errors[1].message


def test_txn_index_last_stable_offset_past_its_marker(generated):
    txn_index = next(p for p in sorted(generated.glob("*.txnindex")) if p.stat().st_size)
    data = bytearray(txn_index.read_bytes())
    last = struct.unpack_from(">q", data, 18)[0]
    struct.pack_into(">q", data, 26, last + 2)   # the LSO when the transaction ended: <= last + 1
    txn_index.write_bytes(bytes(data))
    report = verify_partition(str(generated))
    assert _errors(report) == [(txn_index.name, 0)]
    assert "last stable offset" in report.errors[0].message


def test_unreadable_producer_snapshot(generated):
    snapshot = sorted(generated.glob("*.snapshot"))[-1]
    flip_byte(snapshot, 7)
    assert _errors(verify_partition(str(generated))) == [(snapshot.name, 2)]


# -- damage in the indexes ---------------------------------------------------------------------

@pytest.fixture
def real_copy(tmp_path) -> Path:
    return writable_copy(shared_fixture("kafka-real", *OFFSETS_28), tmp_path / OFFSETS_28[1])


def _entries(index: Path) -> list[tuple[int, int]]:
    data = index.read_bytes()
    return [struct.unpack_from(">ii", data, i) for i in range(0, len(data), 8)]


def _write_entries(index: Path, entries) -> None:
    index.write_bytes(b"".join(struct.pack(">ii", *e) for e in entries))


def test_index_entry_past_the_end_of_the_log(real_copy):
    index = real_copy / "00000000000000000000.index"
    entries = _entries(index)
    entries[-1] = (entries[-1][0], (real_copy / "00000000000000000000.log").stat().st_size + 100)
    _write_entries(index, entries)
    report = verify_partition(str(real_copy))
    assert _errors(report) == [(index.name, (len(entries) - 1) * 8)]
    assert "past the end of the log" in report.errors[0].message


def test_unsorted_index(real_copy):
    index = real_copy / "00000000000000000000.index"
    entries = _entries(index)
    entries[1], entries[2] = entries[2], entries[1]
    _write_entries(index, entries)
    report = verify_partition(str(real_copy))
    assert _errors(report) == [(index.name, 16)]
    assert "not strictly increasing" in report.errors[0].message


def test_unsorted_time_index(real_copy):
    time_index = real_copy / "00000000000000000000.timeindex"
    data = bytearray(time_index.read_bytes())
    data[12:24], data[24:36] = data[24:36], data[12:24]
    time_index.write_bytes(bytes(data))
    assert _errors(verify_partition(str(real_copy))) == [(time_index.name, 24)]


def test_index_entry_inside_a_batch(real_copy):
    index = real_copy / "00000000000000000000.index"
    entries = _entries(index)
    entries[7] = (entries[7][0], entries[7][1] + 1)
    _write_entries(index, entries)
    report = verify_partition(str(real_copy))
    assert _errors(report) == [(index.name, 7 * 8)]
    assert "not the start of a batch" in report.errors[0].message


def test_untrimmed_index_of_a_closed_segment(real_copy):
    index = real_copy / "00000000000000000000.index"
    with open(index, "ab") as f:
        f.write(bytes(8 * 100))  # the preallocated zero fill a clean close trims away
    report = verify_partition(str(real_copy))
    assert _errors(report) == [(index.name, 254 * 8)]
    assert "not trimmed" in report.errors[0].message


def test_follower_style_index_is_only_a_warning(real_copy):
    index = real_copy / "00000000000000000000.index"
    entries = _entries(index)
    # A follower's entry: the chunk's last offset (here: one more batch) at the chunk's start.
    entries[10] = (entries[10][0] + 1, entries[10][1])
    _write_entries(index, entries)
    report = verify_partition(str(real_copy))
    assert report.errors == []
    assert [(Path(w.path).name, w.position) for w in report.warnings] == [
        (index.name, 80), (index.name, 80)]  # a DumpLogSegments mismatch; differs from rebuilt
    assert run_cli("verify", real_copy).returncode == 0
    assert run_cli("verify", "--strict", real_copy).returncode == 1


def test_no_partitions_is_bad_input(tmp_path):
    result = run_cli("verify", tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("segmentlog: no Kafka partition directories")
    assert len(result.stderr.splitlines()) == 1


# -- causes first, their echoes marked (issue #35) --------------------------------------------

DEBUG_TOPIC = ("william0423-kafka", "debug_topic-0")


def test_a_flipped_byte_in_the_middle_is_one_cause_and_its_echoes(tmp_path):
    partition = writable_copy(shared_fixture("kafka-real", *DEBUG_TOPIC), tmp_path / DEBUG_TOPIC[1])
    log = partition / "00000000000000000000.log"
    flip_byte(log, log.stat().st_size // 2)    # byte 441: the maxTimestamp of the batch at 401
    result = run_cli("verify", partition)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].endswith("883 bytes: 1 error, 2 more problems following from it")
    assert lines[1].startswith(f"  error: {log} at byte 401: CRC mismatch")
    # before: an error and a warning in the .timeindex, side by side with the CRC mismatch
    assert [line.split(": ")[0:2] for line in lines[2:]] == [
        ["    follows from the above, not a separate fault", "error"],
        ["    follows from the above, not a separate fault", "warning"]]
    assert all(".timeindex" in line for line in lines[2:])


def test_any_flipped_byte_of_a_log_has_its_causes_in_the_log(tmp_path):
    """Flip each byte of the segment in turn: whatever the indexes then disagree with follows
    from the damage the .log shows (offsets lie outside the CRC, so not every flip is a CRC
    mismatch), and the causes are all in the .log."""
    partition = writable_copy(shared_fixture("kafka-real", *DEBUG_TOPIC), tmp_path / DEBUG_TOPIC[1])
    log = partition / "00000000000000000000.log"
    original = log.read_bytes()
    for position in range(len(original)):
        log.write_bytes(original[:position] + bytes([original[position] ^ 0xFF])
                        + original[position + 1:])
        # (no assertion that there is an error: the leader epoch's bytes are outside every
        # check, and a flip there is none)
        report = verify_partition(str(partition))
        assert [p.path for p in report.causes] == [str(log)] * len(report.causes), (
            position, [str(p) for p in report.causes])


def test_an_index_fault_before_the_damage_is_its_own_error(tmp_path):
    """An `.index` entry pointing into the log before its first damaged batch does not follow
    from that damage: it is listed as an error of its own, not as its echo."""
    generate_log(str(tmp_path / "d"), topics=["v"], records=2000, value_size=100)
    partition = tmp_path / "d" / "v-0"
    log, batches = _batches(partition, 0)
    index = log.with_suffix(".index")
    entries = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", entries, 0)
    struct.pack_into(">ii", entries, 0, relative, position + 1)   # not a batch start any more
    index.write_bytes(bytes(entries))
    flip_byte(log, batches[-1].position + 70)                        # a CRC error at the end
    result = run_cli("verify", partition)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].endswith(": 2 errors, 1 warning"), result.stdout
    assert not any("follows from" in line for line in lines), result.stdout
    report = verify_partition(str(partition))
    assert sorted(_errors(report)) == [(index.name, 0), (log.name, batches[-1].position)]
    assert all(p.cause is None for p in report.problems)


def test_damage_after_the_last_whole_batch_is_a_cause_only_of_what_follows_it():
    """A torn tail is damage numbered past the last whole batch: a problem about a whole batch
    before it is its own, one past that batch follows from it (found by the mutation fuzz: an
    IndexError looking up the damaged batch's position)."""
    from segmentlog_source.cli.verify_batches import SegmentBatches

    batches = SegmentBatches()
    for position, base, last in ((0, 0, 1), (120, 2, 3)):
        batches.positions.append(position)
        batches.base_offsets.append(base)
        batches.last_offsets.append(last)
    torn = object()
    batches.damage[2] = torn
    assert batches.cause_at(position=120) is None and batches.cause_at(offset=3) is None
    assert batches.cause_at(position=121) is torn and batches.cause_at(offset=4) is torn
    assert batches.cause_at(1) is None and batches.cause_at() is torn
