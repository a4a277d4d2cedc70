"""Appending by runs (storage/log/batch_run.py) leaves the very files that appending batch by
batch leaves, and fails the same way.

Generated streams of batches are appended twice into fresh partitions, once with runs off and
once with runs on for every buffer (and runs cut short, so that one buffer takes several): the
`.log`, `.index`, `.timeindex`, snapshots and leader-epoch checkpoint must be equal byte for
byte, the returned offsets too. The streams mix what ends a run (a producer's batches, a
transaction and its marker, a leader epoch change, a batch too big for a segment) with rolls
by size, by time and by a full index; the damaged ones hold a batch whose CRC fails or end
mid-batch, or a batch whose length field (outside the CRC) was changed.
"""

from __future__ import annotations

import errno
import itertools
from pathlib import Path
import random

import pytest

from segmentlog_source.errors import SegmentLogError
from segmentlog_source.format.control import ABORT, COMMIT, end_txn_marker
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log import batch_run
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog

CASES = 60


def _batch(rng: random.Random, clock: list[int], value_sizes=(3, 40, 700), **fields) -> bytes:
    records = []
    for i in range(rng.randint(1, 12)):
        if clock[0] >= 0:
            clock[0] += rng.choice([0, 1, 7, 250, 4000]) if rng.random() < 0.9 else -300
        records.append(Record(i, clock[0], b"k%d" % rng.randrange(50),
                              bytes(rng.randrange(256) for _ in range(rng.choice(value_sizes)))))
    return encode_batch(records, **fields)


def _stream(rng: random.Random) -> list[bytes]:
    """Batches as a writer would hand them over, now and then what ends a run."""
    clock, out, epoch, sequence = [1_700_000_000_000], [], 0, 0
    for _ in range(rng.randint(5, 120)):
        kind = rng.random()
        if kind < 0.06:        # a producer's batch: its state is kept one by one
            out.append(_batch(rng, clock, producer_id=7, producer_epoch=0,
                              base_sequence=sequence))
            sequence += 20
        elif kind < 0.09:      # a transaction and its marker
            out.append(_batch(rng, clock, producer_id=9, producer_epoch=1, base_sequence=0,
                              is_transactional=True))
            key, value = end_txn_marker(rng.choice([ABORT, COMMIT]), coordinator_epoch=2)
            out.append(encode_batch([Record(0, clock[0], key, value)], is_control=True,
                                    is_transactional=True, producer_id=9, producer_epoch=1))
        elif kind < 0.095:     # bigger than the smallest segments
            out.append(_batch(rng, clock, value_sizes=(5_000,), partition_leader_epoch=epoch))
        elif kind < 0.13:      # no timestamps: a segment they start rolls by the wall clock
            out += [_batch(rng, [-1], partition_leader_epoch=epoch)
                    for _ in range(rng.randint(1, 30))]
        else:
            if rng.random() < 0.05:
                epoch += 1     # batches keep their own leader epoch unless append() sets one
            out.append(_batch(rng, clock, partition_leader_epoch=epoch))
    return out


def _config(rng: random.Random) -> LogConfig:
    ticks = itertools.count(0, 1000)    # a wall clock that moves a second per look
    return LogConfig(segment_bytes=rng.choice([12_000, 30_000, 10**9]),
                     segment_ms=rng.choice([10**12, 9_000, 60_000]),
                     segment_index_bytes=rng.choice([48, 96, 10 * 1024 * 1024]),
                     index_interval_bytes=rng.choice([0, 300, 4096]), fsync="none",
                     clock_ms=lambda: next(ticks))


def _appends(rng: random.Random, batches: list[bytes]):
    """The stream cut into append calls: (buffers, leader epoch or None, offsets given?)."""
    i = 0
    while i < len(batches):
        n = rng.randint(1, 40)
        group, i = batches[i:i + n], i + n
        buffers = [b"".join(group)] if rng.random() < 0.5 else \
            [b"".join(group[j:j + 3]) for j in range(0, len(group), 3)]
        yield buffers, rng.choice([None, 0, 5]), rng.random() < 0.2


def _given_offsets(buffers: list[bytes], next_offset: int, rng: random.Random) -> list[bytes]:
    """The same batches with base offsets from `next_offset`, gaps here and there (what
    append_batches takes: the caller assigned them)."""
    out = []
    for buffer in buffers:
        data, pos = bytearray(buffer), 0
        while pos < len(data):
            size = int.from_bytes(data[pos + 8:pos + 12], "big") + 12
            delta = int.from_bytes(data[pos + 23:pos + 27], "big")
            next_offset += rng.choice([0, 0, 0, 3])
            data[pos:pos + 8] = next_offset.to_bytes(8, "big")
            next_offset += delta + 1
            pos += size
        out.append(bytes(data))
    return out


def _write(path: Path, config: LogConfig, seed: int, damage: str | None) -> tuple[list, str]:
    rng = random.Random(seed)
    batches = _stream(rng)
    if damage in ("crc", "base", "length"):
        i = rng.randrange(len(batches))
        bad = bytearray(batches[i])
        if damage == "crc":      # a byte the CRC covers
            bad[rng.randrange(21, len(bad))] ^= 0x10
        elif damage == "base":   # a base offset no broker writes (append() replaces it)
            bad[:8] = rng.choice([-5, 2**63 - 3]).to_bytes(8, "big", signed=True)
        else:                    # a length the CRC does not cover: the framing moves
            length = int.from_bytes(bad[8:12], "big")
            bad[8:12] = max(0, length + rng.choice([-1, 1, -61, 500, 2**31 - 1 - length])
                            ).to_bytes(4, "big")
        batches[i] = bytes(bad)
    results, error = [], ""
    log = PartitionLog.open_for_append(str(path), config=config)
    try:
        for buffers, epoch, given in _appends(rng, batches):
            if damage == "torn" and rng.random() < 0.2:
                buffers = buffers[:-1] + [buffers[-1][:-rng.randint(1, 30)]]
            if given:
                results.append(log.append_batches(
                    _given_offsets(buffers, log.log_end_offset, rng)))
            else:
                results.append(log.append(buffers, leader_epoch=epoch))
    except SegmentLogError as err:
        error = str(err)
    finally:
        log.close()
    return results, error


def _files(path: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(path.iterdir()) if f.name != ".segmentlog.lock"}


@pytest.mark.parametrize("damage", [None, "crc", "base", "length", "torn"])
def test_runs_write_what_batch_by_batch_writes(tmp_path, monkeypatch, damage):
    rolled, errors = 0, []
    for case in range(CASES):
        one_by_one, by_runs = tmp_path / f"a{case}" / "t-0", tmp_path / f"b{case}" / "t-0"
        monkeypatch.setattr(batch_run, "RUN_MIN_BYTES", 1 << 62)
        expected = _write(one_by_one, _config(random.Random(case)), case, damage)
        monkeypatch.setattr(batch_run, "RUN_MIN_BYTES", 0)
        monkeypatch.setattr(batch_run, "RUN_MIN_BATCHES", 1)
        monkeypatch.setattr(batch_run, "MAX_RUN", random.Random(case).choice([2, 5, 4096]))
        monkeypatch.setattr(batch_run, "MAX_RUN_BYTES", random.Random(case).choice([1, 9_000,
                                                                                   4 << 20]))
        assert _write(by_runs, _config(random.Random(case)), case, damage) == expected, \
            f"case {case}"
        assert _files(by_runs) == _files(one_by_one), f"case {case}"
        rolled += len(list(by_runs.glob("*.log"))) > 1
        errors += [expected[1]] if expected[1] else []
    assert rolled > CASES // 4          # the cases did roll segments
    too_big = [e for e in errors if "cannot fit in a segment" in e]
    assert too_big                      # a batch bigger than a segment ends a run too
    if damage:
        assert len(errors) - len(too_big) > CASES // 5, errors
    else:
        assert errors == too_big, errors


def test_a_run_is_taken_where_it_can_be(tmp_path, monkeypatch):
    """The comparison above would pass if runs were never taken: count them."""
    taken = []
    original = PartitionLog._append_run

    def counting(self, *args):
        run = original(self, *args)
        taken.append(0 if run is None else run.count)
        return run

    monkeypatch.setattr(PartitionLog, "_append_run", counting)
    monkeypatch.setattr(batch_run, "RUN_MIN_BYTES", 0)
    monkeypatch.setattr(batch_run, "RUN_MIN_BATCHES", 1)
    for case in range(10):
        _write(tmp_path / f"{case}" / "t-0", _config(random.Random(case)), case, None)
    assert sum(taken) > 200 and max(taken) >= 5, taken
    # what a write's commit appends: plain batches, one run per buffer (MAX_RUN batches)
    rng, clock = random.Random(3), [1_700_000_000_000]
    taken.clear()
    with PartitionLog.open_for_append(str(tmp_path / "plain-0")) as log:
        log.append(b"".join(_batch(rng, clock) for _ in range(300)), leader_epoch=0)
    assert taken == [300]


def _plain_buffer(batches: int, seed: int = 5) -> bytes:
    rng, clock = random.Random(seed), [1_700_000_000_000]
    return b"".join(_batch(rng, clock) for _ in range(batches))


def test_a_buffer_is_on_file_before_the_next_is_asked_for(tmp_path):
    """A generator of buffers may read the log between them (and see all it appended)."""
    seen = []

    def buffers(log):
        for i in range(3):
            yield _plain_buffer(400, seed=i)
            reader = PartitionLog.open(str(tmp_path / "t-0"))
            seen.append((log.log_end_offset,
                         sum(h.last_offset - h.base_offset + 1
                             for s in reader.segments for h, _ in s.iter_entries())))

    with PartitionLog.open_for_append(str(tmp_path / "t-0")) as log:
        log.append(buffers(log), leader_epoch=0)
    assert len(seen) == 3 and all(leo == on_file > 0 for leo, on_file in seen), seen


@pytest.mark.parametrize("fail_at", [0, 300_000, 900_000])
def test_a_failed_write_leaves_the_log_as_its_files_are(tmp_path, fail_at):
    """A disk full half-way through a run: the append raises the disk's error, and the log
    (its end offset, what it reads, what it writes next, what a reopen finds) is what is on
    file, never what memory had appended but could not write."""
    path = tmp_path / "t-0"
    log = PartitionLog.open_for_append(str(path))
    log.append(_plain_buffer(50, seed=9), leader_epoch=0)   # (batch by batch: a small buffer)
    write_at, before = log._appender.log_file.write_at, log.segments[-1].size

    def disk_full(position, data):
        room = max(0, fail_at - position)
        if len(data) > room:
            write_at(position, memoryview(data)[:room])     # what fits, then the error
            raise OSError(errno.ENOSPC, "No space left on device")
        write_at(position, data)

    log._appender.log_file.write_at = disk_full
    with pytest.raises(OSError, match="No space left"):
        log.append(_plain_buffer(2_000, seed=10), leader_epoch=0)
    on_file = PartitionLog.open(str(path))
    assert log.log_end_offset == on_file.log_end_offset
    assert log.segments[-1].size == on_file.segments[-1].size <= max(fail_at, before)
    first, _ = log.append(_plain_buffer(300, seed=11), leader_epoch=0)   # space again
    assert first == on_file.log_end_offset
    end = log.log_end_offset
    log.close()
    reopened = PartitionLog.open_for_append(str(path))
    assert reopened.log_end_offset == end      # nothing of the failed call came back
    offsets = [h.base_offset for s in reopened.segments for h, _ in s.iter_entries()]
    assert offsets == sorted(set(offsets))
    reopened.close()
