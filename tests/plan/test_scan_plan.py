"""The planner against fake partitions whose batches and indexes follow Kafka's rules."""

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings, strategies as st

from segmentlog_source.plan.scan_plan import (
    group_tasks, plan_partition, timestamp_floor_offset)


@dataclass
class FakeSegment:
    base_offset: int
    batches: list  # (base, last, position, size, max_ts)
    log_path: str = ""
    interval: int = 100
    trusted_time: bool = True

    @property
    def size(self):
        return sum(b[3] for b in self.batches)

    def offset_index_entries(self):
        offs, poss, since = [], [], 0
        for base, last, pos, size, _ in self.batches:
            if since > self.interval:       # Kafka's live rule: check before counting
                offs.append(last); poss.append(pos); since = 0
            since += size
        return np.array(offs, dtype=np.int64), np.array(poss, dtype=np.int64)

    def locate(self, offset):
        previous = None
        for base, last, pos, size, _ in self.batches:
            if last >= offset:
                return SimpleNamespace(position=pos, end=pos + size, base_offset=base,
                                       last_offset=last, first_offset_known=True), previous
            previous = last
        return None, previous

    def indexed_last_offset(self):
        return None

    def named_offsets(self):
        return ()

    def next_offset(self):
        return max((b[1] + 1 for b in self.batches), default=self.base_offset)

    def confirm_records(self, offset):
        pass   # (the fake's batches hold what they claim)

    def skipped_by_metadata(self, timestamp_ms):
        return False   # (local segments: no metadata vouches for them)

    def passed_over(self):
        pass   # (the fake's segments meet: make_partition lays them end to end)

    def time_index_entries(self):
        if not self.trusted_time:
            return None
        ts, offs, best = [], [], -1
        for base, last, pos, size, max_ts in self.batches:
            if max_ts > best:
                best = max_ts
                if not ts or best > ts[-1]:
                    ts.append(best); offs.append(last)
        return np.array(ts, dtype=np.int64), np.array(offs, dtype=np.int64)


@dataclass
class FakePartition:
    segments: list
    topic: str = "t"
    partition: int = 0
    log_start_offset: int = 0
    log_end_offset: int = 0
    compacted: bool = False
    dirty_from: int | None = None


def make_partition(draw_sizes, records_per_batch, timestamps, batches_per_segment):
    segments, offset, i = [], 0, 0
    while i < len(draw_sizes):
        chunk = draw_sizes[i:i + batches_per_segment]
        batches, pos = [], 0
        base = offset
        for size in chunk:
            n = records_per_batch
            batches.append((offset, offset + n - 1, pos, size, timestamps[i % len(timestamps)]))
            pos += size; offset += n; i += 1
        segments.append(FakeSegment(base, batches, log_path=f"seg{base}.log"))
    return FakePartition(segments, log_end_offset=offset)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(20, 300), min_size=1, max_size=40), st.integers(1, 5),
       st.lists(st.integers(0, 1000), min_size=1, max_size=10), st.integers(1, 12),
       st.data())
def test_byte_ranges_cover_exactly_what_is_needed(sizes, n, timestamps, per_seg, data):
    part = make_partition(sizes, n, timestamps, per_seg)
    lo = data.draw(st.integers(0, part.log_end_offset))
    hi = data.draw(st.integers(lo, part.log_end_offset))
    tasks = plan_partition(part, lo, hi)
    covered = {(t.path, p) for t in tasks for p in range(t.start, t.end)}
    for seg in part.segments:
        for base, last, pos, size, _ in seg.batches:
            if max(base, lo) <= min(last, hi - 1):   # holds a wanted offset: read whole
                assert all((seg.log_path, p) in covered for p in range(pos, pos + size))
    # and nothing more: exactly the batches holding wanted offsets
    wanted = sum(b[3] for s in part.segments for b in s.batches
                 if max(b[0], lo) <= min(b[1], hi - 1))
    assert sum(t.nbytes for t in tasks) == wanted


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(20, 300), min_size=1, max_size=40), st.integers(1, 5),
       st.lists(st.integers(0, 1000), min_size=1, max_size=10), st.integers(1, 12),
       st.integers(-5, 1100))
def test_timestamp_floor_never_skips_a_matching_batch(sizes, n, timestamps, per_seg, t):
    part = make_partition(sizes, n, timestamps, per_seg)
    floor = timestamp_floor_offset(part, t)
    matching = [b for s in part.segments for b in s.batches if b[4] >= t]
    if floor is None:
        assert not matching
    else:
        assert all(b[1] >= floor for b in matching)


def test_untrusted_time_index_stops_pruning():
    part = make_partition([50] * 6, 2, [10, 20, 30], 2)
    part.segments[1].trusted_time = False
    assert timestamp_floor_offset(part, 1000) == part.segments[1].base_offset


def test_groups_balance_bytes_and_respect_min_partitions():
    part = make_partition([100] * 60, 1, [1], 20)
    tasks = plan_partition(part, 0, part.log_end_offset)
    positions = {s.log_path: s.offset_index_entries()[1] for s in part.segments}
    groups = group_tasks(tasks, positions, max_bytes=10**9, min_groups=4)
    assert len(groups) == 4
    sizes = [sum(t.nbytes for t in g) for g in groups]
    assert sum(sizes) == 6000 and max(sizes) - min(sizes) <= 300
    # pieces are contiguous and never overlap
    pieces = sorted((t.path, t.start, t.end) for g in groups for t in g)
    for a, b in zip(pieces, pieces[1:]):
        assert a[0] != b[0] or a[2] <= b[1]


def test_small_segments_pack_into_one_group():
    part = make_partition([100] * 10, 1, [1], 1)
    tasks = plan_partition(part, 0, part.log_end_offset)
    assert len(tasks) == 10
    assert len(group_tasks(tasks, {}, max_bytes=10**6, min_groups=None)) == 1


def test_offsets_the_cleaner_removed_are_no_loss_unless_the_indexes_name_them():
    # a compacted segment whose batches hold 2..6 (0 and 1 cleaned away), its index naming 6
    batches = [(o, o, (o - 2) * 50, 50, 1) for o in range(2, 7)]
    part = FakePartition([FakeSegment(0, batches, log_path="seg0.log")], log_end_offset=7,
                         compacted=True)
    part.segments[0].indexed_last_offset = lambda: 6
    heard = []
    assert plan_partition(part, 0, 1, lambda seg, a, b: heard.append((a, b))) == []
    assert heard == []
    # the index names offset 6, yet the batches end at 4: the tail was lost
    part.segments[0].batches = batches[:3]
    part.log_end_offset = 7
    plan_partition(part, 5, 7, lambda seg, a, b: heard.append((a, b)))
    assert heard == [(5, 7)]
    # without compaction, any offset no batch holds is lost
    part = FakePartition([FakeSegment(0, batches, log_path="seg0.log")], log_end_offset=7)
    plan_partition(part, 0, 1, lambda seg, a, b: heard.append((a, b)))
    assert heard[-1] == (0, 1)
    # the cleaner checkpoint at 1: offset 0 may be the cleaner's, offset 1 is lost
    part = FakePartition([FakeSegment(0, batches, log_path="seg0.log")], log_end_offset=7,
                         compacted=True, dirty_from=1)
    plan_partition(part, 0, 2, lambda seg, a, b: heard.append((a, b)))
    assert heard[-1] == (1, 2)
    # ... and at 2 (the cleaner went up to the first batch): neither is lost
    heard.clear()
    part.dirty_from = 2
    assert plan_partition(part, 0, 2, lambda seg, a, b: heard.append((a, b))) == []
    assert heard == []


def test_empty_range_plans_nothing():
    part = make_partition([100] * 3, 1, [1], 3)
    assert plan_partition(part, 2, 2) == []
    assert group_tasks([], {}, 100, 2) == []
