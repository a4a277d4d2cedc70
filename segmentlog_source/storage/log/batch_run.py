"""A run of plain batches, appended at once: the commit's hot path (storage/commit/committer.py
appends every batch a write's tasks staged, in order).

Appended one by one, each batch costs ~15 us of Python (its header parsed twice, its offsets
patched, the roll tests, the index rule, the producer state): 0.4 s of a 1.0 s commit of
317 MB in 25,000 batches. What a Spark writer stages is plain: magic-2 data
batches of no producer (no producer state to keep, no transaction marker to apply), one leader
epoch, whole in the buffer. Their headers are walked in compiled code (format/header_walk.py),
offsets assigned and leader epochs set on columns, and the run goes to the active segment as
one append (SegmentAppender.append_run).

Every test the batch-by-batch path makes is made here, per batch, on columns; a run ends just
before the first batch that fails one or is not plain, and PartitionLog appends that batch the
batch-by-batch way: it rolls the segment, keeps producer state, or reports the damage with the
error it always has.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from crc32c import crc32c
import numpy as np

from ...format.batch import (ATTR_CONTROL, LOG_OVERHEAD, MAX_OFFSET, V2_CRC_AT, V2_CRC_START,
                             V2_LEADER_EPOCH_AT)
from ...format.header_walk import (ATTRIBUTES, BASE_OFFSET, LAST_OFFSET_DELTA, LEADER_EPOCH,
                                   MAX_TIMESTAMP, POSITION, PRODUCER_ID, SIZE, new_rows,
                                   walk_v2_headers)

MAX_RUN = 4096       # batches one run takes (rows of 96 bytes)
MAX_RUN_BYTES = 4 << 20   # and bytes: a run is copied once (its offsets set), then written
# A buffer of fewer bytes or batches goes batch by batch: the compiled walk costs ~0.15 s to
# load in a fresh process, what a thousand batches cost one by one (a staged chunk is 4 MiB).
RUN_MIN_BYTES = 1 << 20
RUN_MIN_BATCHES = 64
_BASE_OFFSET_BYTES = np.arange(8)
_LEADER_EPOCH_BYTES = V2_LEADER_EPOCH_AT + np.arange(4)


def worth_runs(view: memoryview) -> bool:
    """Whether the buffer is big and its batches many (judged by its first: a buffer of a few
    big batches, or of something else, goes batch by batch)."""
    if len(view) < RUN_MIN_BYTES:
        return False
    first = int.from_bytes(view[8:12], "big") + LOG_OVERHEAD
    return 0 < first <= len(view) // RUN_MIN_BATCHES


class PlainRun:
    """The plain batches from `view[pos]` that may be appended after `log_end_offset`, with
    the offsets and leader epoch they will have: `count` of them (0: append the batch at `pos`
    the batch-by-batch way)."""

    def __init__(self, view: memoryview, pos: int, log_end_offset: int, *,
                 assign_offsets: bool, leader_epoch: int | None, segment_bytes: int):
        self.view = view
        buf = np.frombuffer(view, np.uint8)
        rows = new_rows(MAX_RUN)
        n, _, _ = walk_v2_headers(buf, 0, pos, len(buf), rows)
        rows = rows[:n]
        self.positions, self.sizes = rows[:, POSITION], rows[:, SIZE]
        deltas = rows[:, LAST_OFFSET_DELTA]
        if assign_offsets:
            counts = np.maximum(deltas, 0) + 1
            self.base_offsets = log_end_offset + np.concatenate(([0], np.cumsum(counts[:-1])))
        else:
            self.base_offsets = rows[:, BASE_OFFSET]
        self.last_offsets = self.base_offsets + deltas
        self.max_timestamps = rows[:, MAX_TIMESTAMP]
        epochs = rows[:, LEADER_EPOCH] if leader_epoch is None else np.full(n, leader_epoch)
        self.leader_epoch = int(epochs[0]) if n else -1
        # what _append_one and the header parse would refuse or treat specially (the stored
        # offsets are checked even where they are replaced: damage is reported, not hidden)
        stored = rows[:, BASE_OFFSET]
        previous_next = np.concatenate(([log_end_offset], self.last_offsets[:-1] + 1))
        ok = ((self.positions + self.sizes <= len(buf))
              & (stored >= 0) & (stored <= MAX_OFFSET - deltas)
              & (rows[:, ATTRIBUTES] & ATTR_CONTROL == 0) & (rows[:, PRODUCER_ID] < 0)
              & (deltas >= 0) & (self.base_offsets >= previous_next)
              & (self.last_offsets <= MAX_OFFSET)
              & (epochs == self.leader_epoch) & (self.sizes <= segment_bytes))
        bad = np.flatnonzero(~ok)
        self.count = int(bad[0]) if bad.size else n
        over = np.flatnonzero(np.cumsum(self.sizes[:self.count]) > MAX_RUN_BYTES)
        if over.size:
            self.count = max(1, int(over[0]))

    def limit(self, count: int) -> None:
        """Keep only the first `count` batches (those the segment takes before it must roll),
        and of them those whose CRC holds."""
        self.count = min(self.count, count)
        for i, (position, size) in enumerate(zip(self.positions[:self.count].tolist(),
                                                 self.sizes[:self.count].tolist())):
            stored = int.from_bytes(self.view[position + V2_CRC_AT:position + V2_CRC_START],
                                    "big")
            if crc32c(self.view[position + V2_CRC_START:position + size]) != stored:
                self.count = i
                break

    def columns(self):
        """(sizes, last offsets, max timestamps) of the kept batches."""
        n = self.count
        return self.sizes[:n], self.last_offsets[:n], self.max_timestamps[:n]

    def patched(self, assign_offsets: bool, leader_epoch: int | None,
                in_place: bool = False):
        """The kept batches' bytes with their offsets and leader epoch set (the CRC covers
        neither): copied, or, `in_place`, set in the buffer itself (its owner gave it up)."""
        n = self.count
        start = int(self.positions[0])
        kept = self.view[start:int(self.positions[n - 1] + self.sizes[n - 1])]
        data = kept if in_place else bytearray(kept)
        at = (self.positions[:n] - start)[:, None]
        out = np.frombuffer(data, np.uint8)
        if assign_offsets:
            out[at + _BASE_OFFSET_BYTES] = (self.base_offsets[:n].astype(">i8")
                                            .view(np.uint8).reshape(n, 8))
        if leader_epoch is not None:
            out[at + _LEADER_EPOCH_BYTES] = (np.full(n, leader_epoch, ">i4")
                                             .view(np.uint8).reshape(n, 4))
        return data

    def end(self) -> int:
        """The buffer position just past the kept batches."""
        return int(self.positions[self.count - 1] + self.sizes[self.count - 1])


def buffers(data) -> Iterator[memoryview]:
    """`data` as buffers of batches laid end to end (it is one, or an iterable of them)."""
    each: Iterable = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    for buffer in each:
        yield memoryview(buffer).cast("B")
