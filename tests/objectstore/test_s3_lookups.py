"""ListOffsets by timestamp on an object store (moto on loopback, counting what it serves), over
segments small enough that a lookup reads each `.log` it passes over whole: those segments are
judged by their batches alone, so their `.timeindex` and `.index` are never requested, and damage
to them cannot change an answer. Generated cases: logs with disordered timestamps, targets drawn
from their records, index files of the passed-over segments damaged or deleted; every answer is
the one a scan of every record gives (tests/storage/helpers.BruteForce)."""

from __future__ import annotations

import random
import shutil
import struct

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.errors import CorruptDataError, DataLossError
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import RowFilter
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.storage.io.filesystem import filesystem_for
from segmentlog_source.storage.log.list_offsets import offset_for_timestamp
from segmentlog_source.storage.log.log_segment import CONFIRMING_READ_BYTES
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import shared_fixture
from tests.storage.helpers import BruteForce

START = 1_700_000_000_000
SEEDS = range(4)
MAX_TIMESTAMP_AT = 35     # a v2 batch header's maxTimestamp (CRC-covered), and baseOffset at 0


@pytest.fixture(scope="module")
def bucket(s3):
    s3.create_bucket("lookups")
    return "s3://lookups"


def _generate(path, seed: int) -> BruteForce:
    """One partition of ~20 segments of 4 KiB whose timestamps go back and forth (a segment's
    largest timestamp need not be above the one before it)."""
    generate_log(str(path), topics=["t"], partitions=1, records=1500, value_size=30,
                 records_per_batch=5, segment_bytes=4096, timestamp_step_ms=10,
                 timestamp_jitter_ms=400, seed=seed, start_timestamp=START)
    log = PartitionLog.open(str(path / "t-0"))
    assert all(s.size <= CONFIRMING_READ_BYTES for s in log.segments)
    return BruteForce(log)


def _targets(brute: BruteForce, seed: int, count: int = 4) -> list[tuple[int, int]]:
    """(target, index of the segment that answers it), past the first segments: the lookup
    passes over a few."""
    rng = random.Random(seed)
    answering = {}
    for target in brute.record_timestamps():
        first = next(i for i, (largest, _) in enumerate(brute.per_segment) if largest >= target)
        if 3 <= first < len(brute.per_segment) - 1:
            answering[target] = first
    picked = rng.sample(sorted(answering), count)
    return [(t, answering[t]) for t in picked]


def _s3_log(s3, uri: str) -> PartitionLog:
    """The partition as a planner opens it: on a fresh listing of the tree."""
    fs, path = filesystem_for(uri, parse_read_options({"path": uri, **s3.storage_options}).store)
    return PartitionLog.open(path + "/t-0", fs.with_tree(path))


def _requests_by_file(s3) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in s3.requests():
        out.setdefault(r.key.rsplit("/", 1)[-1], []).append(r.method)
    return out


def _damage(path, how: str) -> None:
    if how == "deleted":
        path.unlink()
    elif how == "garbage":
        path.write_bytes(bytes(random.Random(path.name).randrange(256)
                               for _ in range(path.stat().st_size or 24)))
    elif how == "odd length":
        path.write_bytes(path.read_bytes()[:-5] or b"\x01")
    elif how == "last entry lost":
        entry = 12 if path.suffix == ".timeindex" else 8
        path.write_bytes(path.read_bytes()[:-entry])
    elif how == "timestamps raised":     # an index that would pass over nothing, or too little
        data = bytearray(path.read_bytes())
        for at in range(0, len(data) - 11, 12):
            struct.pack_into(">q", data, at, struct.unpack_from(">q", data, at)[0] + 10**9)
        path.write_bytes(bytes(data))


DAMAGES = ["deleted", "garbage", "odd length", "last entry lost", "timestamps raised"]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_lookup_passes_over_small_segments_on_their_batches(s3, bucket, tmp_path, seed):
    """Intact logs: each answer is the records' answer, and a segment passed over costs the
    HEAD and GET of its `.log` (read whole with its first header), nothing of its indexes."""
    brute = _generate(tmp_path / "data", seed)
    uri = f"{bucket}/intact-{seed}"
    s3.upload_tree(tmp_path / "data", uri)
    for target, first in _targets(brute, seed):
        log = _s3_log(s3, uri)
        s3.reset_counts()
        assert offset_for_timestamp(log, target) == brute.offset_for_timestamp(target)
        asked = _requests_by_file(s3)
        for segment in log.segments[:first]:
            name = segment.log_path.rsplit("/", 1)[-1]
            assert sorted(asked.pop(name)) == ["GET", "HEAD"], (target, name)
            for index in (segment.index_path, segment.time_index_path):
                assert index.rsplit("/", 1)[-1] not in asked, (target, index)
        # the answering segment: its .log, and its indexes read at once (an empty one, as a
        # segment under the index interval has, costs nothing: the listing gave its size)
        answering = log.segments[first]
        assert sorted(asked.pop(answering.log_path.rsplit("/", 1)[-1])) == ["GET", "HEAD"]
        for path in (answering.index_path, answering.time_index_path):
            assert sorted(asked.pop(path.rsplit("/", 1)[-1], [])) in ([], ["GET", "HEAD"])
        # the last segment's files, for the log end (read from its tail), and at most the
        # first header of the segments after the answer in its window (their names)
        last = log.segments[-1]
        for path in (last.log_path, last.index_path, last.time_index_path):
            asked.pop(path.rsplit("/", 1)[-1], None)
        assert all(sorted(methods) == ["GET", "HEAD"] and name.endswith(".log")
                   for name, methods in asked.items()), asked


@pytest.mark.parametrize("seed", SEEDS)
def test_damaged_indexes_of_passed_over_segments_change_no_answer(s3, bucket, tmp_path, seed):
    """The same logs with the `.timeindex` or `.index` (or both) of every segment below the
    answer damaged or deleted, a kind of damage each: the answers are the records' still,
    and none of those files is requested."""
    brute = _generate(tmp_path / "data", seed)
    rng = random.Random(seed)
    for n, (target, first) in enumerate(_targets(brute, seed, count=2)):
        copy = tmp_path / f"damaged-{n}"
        shutil.copytree(tmp_path / "data", copy)
        damaged = set()
        for segment in brute.log.segments[:first]:
            suffixes = rng.choice([(".timeindex",), (".index",), (".timeindex", ".index")])
            for suffix in suffixes:
                path = copy / "t-0" / f"{segment.base_offset:020d}{suffix}"
                _damage(path, rng.choice(DAMAGES))
                damaged.add(path.name)
        uri = f"{bucket}/damaged-{seed}-{n}"
        s3.upload_tree(copy, uri)
        log = _s3_log(s3, uri)
        s3.reset_counts()
        assert offset_for_timestamp(log, target) == brute.offset_for_timestamp(target)
        assert not damaged & set(_requests_by_file(s3)), damaged & set(_requests_by_file(s3))


def _batch_positions(path) -> list[int]:
    data, at, out = path.read_bytes(), 0, []
    while at + 12 <= len(data):
        out.append(at)
        at += 12 + struct.unpack_from(">i", data, at + 8)[0]   # (offset, length, then that)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_damage_in_a_passed_over_log_is_an_error_naming_it(s3, bucket, tmp_path, seed):
    """What judges a passed-over segment is checked: a batch's maxTimestamp changed (its CRC
    fails), a batch's base offset moved below the batch before it (no CRC covers it), and a
    segment lost from among those passed over (its offsets missing between its neighbours)."""
    brute = _generate(tmp_path / "data", seed)
    target, first = _targets(brute, seed, count=1)[0]
    victim = brute.log.segments[first // 2]
    name = f"{victim.base_offset:020d}.log"
    cases = {}
    for case in ("max timestamp", "base offset", "lost segment"):
        copy = tmp_path / case.replace(" ", "-")
        shutil.copytree(tmp_path / "data", copy)
        log_file = copy / "t-0" / name
        positions = _batch_positions(log_file)
        data = bytearray(log_file.read_bytes())
        if case == "max timestamp":       # lowered: the segment would be passed over wrongly
            at = positions[-1] + MAX_TIMESTAMP_AT
            struct.pack_into(">q", data, at, struct.unpack_from(">q", data, at)[0] - 10**6)
            log_file.write_bytes(bytes(data))
        elif case == "base offset":
            at = positions[-1]
            struct.pack_into(">q", data, at, victim.base_offset)
            log_file.write_bytes(bytes(data))
        else:
            for path in (copy / "t-0").glob(f"{victim.base_offset:020d}.*"):
                path.unlink()
        uri = f"{bucket}/log-damage-{seed}-{case.replace(' ', '-')}"
        s3.upload_tree(copy, uri)
        cases[case] = uri
    with pytest.raises(CorruptDataError, match="CRC mismatch") as crc:
        offset_for_timestamp(_s3_log(s3, cases["max timestamp"]), target)
    assert name in str(crc.value)
    with pytest.raises(CorruptDataError, match="do not follow") as moved:
        offset_for_timestamp(_s3_log(s3, cases["base offset"]), target)
    assert name in str(moved.value)
    with pytest.raises(DataLossError, match="missing"):
        offset_for_timestamp(_s3_log(s3, cases["lost segment"]), target)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_time_index_read_after_all_is_checked_against_the_batches(s3, bucket, tmp_path,
                                                                    seed):
    """The segment that answers has its time index read (and the planner's time floor, WHERE
    timestamp >= T, skips on every segment's entries): its last entry lowered below the
    segment's largest timestamp, which the batches alone judged the segment by, is an error
    naming the `.timeindex`, for ListOffsets and for the time floor alike."""
    brute = _generate(tmp_path / "data", seed)
    target, first = _targets(brute, seed, count=1)[0]
    for victim in (first, first - 1):    # the answering segment; one the floor skips on
        copy = tmp_path / f"lowered-{victim}"
        shutil.copytree(tmp_path / "data", copy)
        index = copy / "t-0" / f"{brute.log.segments[victim].base_offset:020d}.timeindex"
        data = bytearray(index.read_bytes())
        struct.pack_into(">q", data, len(data) - 12,
                         struct.unpack_from(">q", data, len(data) - 12)[0] - 1)
        index.write_bytes(bytes(data))
        uri = f"{bucket}/lowered-{seed}-{victim}"
        s3.upload_tree(copy, uri)
        if victim == first:
            with pytest.raises(CorruptDataError, match="last time index entry") as lookup:
                offset_for_timestamp(_s3_log(s3, uri), target)
            assert index.name in str(lookup.value)
            assert lookup.value.position == len(data) - 12    # the last entry's byte
        with pytest.raises(CorruptDataError, match="last time index entry") as floor:
            plan_read(parse_read_options({"path": uri, **s3.storage_options}),
                      RowFilter(timestamp_lo_ms=target))
        assert index.name in str(floor.value) and floor.value.position == len(data) - 12
    # intact, the floor starts at or below the records' answer
    uri = f"{bucket}/intact-{seed}"
    s3.upload_tree(tmp_path / "data", uri)
    plan = plan_read(parse_read_options({"path": uri, **s3.storage_options}),
                     RowFilter(timestamp_lo_ms=target))
    starts = [t.offset_lo for g in plan.groups for t in g.tasks]
    assert min(starts) <= brute.offset_for_timestamp(target)


REAL = shared_fixture("kafka-real")
REAL_CLOSED = sorted(p for p in REAL.glob("*/*") if p.is_dir() and len(list(p.glob("*.log"))) > 1)


@pytest.mark.parametrize("partition", REAL_CLOSED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_broker_written_segments_judged_by_their_batches_answer_as_their_indexes(
        s3, bucket, tmp_path, partition):
    """Broker-written partitions with closed segments (compacted ones among them): every
    lookup on S3, passing over or answering from segments judged by their batches, answers
    what the records say, as the local read through the indexes does."""
    copy = tmp_path / partition.parent.name
    (copy / partition.name).parent.mkdir(parents=True)
    shutil.copytree(partition, copy / partition.name)
    uri = f"{bucket}/real/{partition.parent.name}"
    s3.upload_tree(copy, uri)
    local = PartitionLog.open(str(copy / partition.name))
    brute = BruteForce(local)
    fs, path = filesystem_for(uri, parse_read_options({"path": uri, **s3.storage_options}).store)
    remote = PartitionLog.open(f"{path}/{partition.name}", fs.with_tree(path))
    assert any(s.judged_by_batches for s in remote.segments)
    for target in sorted({t + d for t in brute.record_timestamps() for d in (-1, 0, 1)}):
        expected = brute.offset_for_timestamp(target)
        assert offset_for_timestamp(remote, target) == expected, target
        assert offset_for_timestamp(local, target) == expected, target
