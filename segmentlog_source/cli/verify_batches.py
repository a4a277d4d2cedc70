"""What `segmentlog verify` knows of one segment's batches once scanned: where each is, its
offsets and largest timestamp, and which are damaged; and which damage a problem found later
(in an index, in the files around the log) follows from."""

from __future__ import annotations

from array import array
import bisect

from ..format.batch import BatchHeader


class SegmentBatches:
    """What the index checks need to know about a segment's batches, 32 bytes per batch."""

    def __init__(self):
        self.positions, self.base_offsets, self.last_offsets = array("q"), array("q"), array("q")
        self.record_max_timestamps = array("q")
        # batch number -> the first error found in it (a CRC mismatch, offsets that do not fit):
        # what an index says of a damaged batch, or what follows it, is judged against that
        self.damage: dict[int, object] = {}
        self.abort_markers: dict[int, int] = {}   # offset -> producer id
        self.markers: dict[int, int] = {}         # every end-transaction marker's, too
        self.txn_starts: dict[tuple[int, int], int] = {}   # (producer, base) -> last offset
        self.complete = True  # False when an error stopped the scan early
        self.torn = False     # a partial batch after the last whole one

    def add(self, header: BatchHeader, base_offset: int, record_max_timestamp: int) -> None:
        if header.is_transactional and not header.is_control:
            self.txn_starts[(header.producer_id, base_offset)] = header.last_offset
        self.positions.append(header.position)
        self.base_offsets.append(base_offset)
        self.last_offsets.append(header.last_offset)
        self.record_max_timestamps.append(record_max_timestamp)

    def cause_at(self, j: int | None = None, *, position: int | None = None,
                 offset: int | None = None):
        """The damage a problem about batch `j` (or byte `position`, or `offset`) follows
        from: batch j's own, else the segment's first damaged batch when the problem points at
        or after it (from there on the batches say nothing reliable: offsets and timestamps are
        read from them, and a damaged length moves every later batch). A problem that points
        before it is one of its own: None. None too when no batch is damaged. Given none of
        them, the problem is about the whole segment: its first damage."""
        if not self.damage:
            return None
        if j is not None and j in self.damage:
            return self.damage[j]
        first = min(self.damage)
        if first < len(self.positions):
            start, start_offset = self.positions[first], self.base_offsets[first]
        else:   # damage after the last whole batch (a torn tail): it starts past that batch
            start = self.positions[-1] + 1 if self.positions else 0
            start_offset = self.last_offsets[-1] + 1 if self.last_offsets else 0
        if j is not None and j < first:
            return None
        if position is not None and position < start:
            return None
        if offset is not None and offset < start_offset:
            return None
        return self.damage[first]

    def tail_cause(self):
        """The damage that may have cut the log short (offsets past the log end that the
        files around the segments promise): the last batch's own (its header gives the log
        end), or the first when a torn tail follows or no batch is whole. None: the end was
        read from sound batches."""
        if not self.damage:
            return None
        if self.positions and len(self.positions) - 1 in self.damage:
            return self.damage[len(self.positions) - 1]
        # (no whole batch, or a torn tail after the damage: the end is where the damage is)
        return self.damage[min(self.damage)] if self.torn or not self.positions else None

    def at_position(self, position: int) -> int | None:
        i = bisect.bisect_left(self.positions, position)
        return i if i < len(self.positions) and self.positions[i] == position else None
