"""Remote segments against a partition's leader-epoch lineage: Kafka's validity check
(RemoteLogManager.isRemoteSegmentWithinLeaderEpochs), a lineage derived from the segments when
the broker's is not at hand, and the offsets each live segment serves (remote_log_metadata.py's
live_segments).

A lineage is ((epoch, start offset), ...) ascending, as a leader-epoch-checkpoint lists it;
a segment's own lineage is its SegmentLeaderEpochs. Both are first filtered as Kafka's
buildFilteredLeaderEpochMap filters them: an epoch whose start equals the next epoch's start
holds no record and is dropped.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from itertools import accumulate

from ...format.remote_log_metadata import RemoteLogSegmentMetadata

_NO_END = (1 << 63) - 1


@dataclass(frozen=True)
class LiveSegment:
    """A remote segment to read, from first_offset to last_offset (inclusive): its whole
    range unless a later copy takes part of it over."""

    metadata: RemoteLogSegmentMetadata
    first_offset: int
    last_offset: int

    segment_id = property(lambda self: self.metadata.segment_id)
    topic_id = property(lambda self: self.metadata.topic_id)
    topic = property(lambda self: self.metadata.topic)
    partition = property(lambda self: self.metadata.partition)
    start_offset = property(lambda self: self.metadata.start_offset)
    end_offset = property(lambda self: self.metadata.end_offset)

    @property
    def whole(self) -> bool:
        return (self.first_offset, self.last_offset) == (self.metadata.start_offset,
                                                         self.metadata.end_offset)


@dataclass(frozen=True)
class Shadowed:
    """Offsets of a finished copy that are not read from it, and why."""

    metadata: RemoteLogSegmentMetadata
    first_offset: int
    last_offset: int
    reason: str

    segment_id = property(lambda self: self.metadata.segment_id)

    def __str__(self) -> str:
        m = self.metadata
        return (f"remote segment {m.segment_id} ({m.start_offset}..{m.end_offset}) of "
                f"{m.topic}-{m.partition}: offsets {self.first_offset}..{self.last_offset} are "
                f"not read from it: {self.reason}")


@dataclass(frozen=True)
class LiveSegments:
    """live_segments' answer; iterating it gives `segments`."""

    segments: tuple           # LiveSegment, by offset, no offset twice
    shadowed: tuple           # Shadowed: finished copies (or parts) another copy replaces
    outside_lineage: tuple    # Shadowed: finished copies that fail the lineage check
    gaps: tuple               # (first, last) offsets between live segments that none holds
    lineage: tuple            # the (filtered) lineage used, given or derived

    def __iter__(self):
        return iter(self.segments)

    def __len__(self) -> int:
        return len(self.segments)


def filtered_epochs(entries) -> tuple:
    """buildFilteredLeaderEpochMap: drop each epoch that starts where the next one starts."""
    entries = tuple(entries)
    return tuple(e for e, after in zip(entries, entries[1:] + (None,))
                 if after is None or e[1] != after[1])


def epoch_end(m: RemoteLogSegmentMetadata, epoch: int) -> int:
    """The last offset of `epoch` in the segment: the next epoch's start - 1, or its end."""
    epochs = m.segment_leader_epochs
    i = next(k for k, (e, _) in enumerate(epochs) if e == epoch)
    return epochs[i + 1][1] - 1 if i + 1 < len(epochs) else m.end_offset


def _epoch_at(m: RemoteLogSegmentMetadata, offset: int) -> int:
    epoch = m.segment_leader_epochs[0][0]
    for e, start in m.segment_leader_epochs:
        if start > offset:
            break
        epoch = e
    return epoch


def lineage_violation(m: RemoteLogSegmentMetadata, lineage, log_end_offset: int | None = None
                      ) -> str | None:
    """Why `m` fails isRemoteSegmentWithinLeaderEpochs against `lineage` (filtered); None when
    it passes. Segment epochs below the lineage's first are the part before the log start and
    are not checked; the first checked one may start late in its epoch only if it is the
    lineage's first epoch; every later one must start where the lineage's does, and the
    segment must end before the lineage's next epoch (and below the log end offset)."""
    lead = dict(lineage)
    keys = [e for e, _ in lineage]
    own = filtered_epochs(m.segment_leader_epochs)
    last = own[-1][0]
    if not keys[0] <= last <= keys[-1]:
        return (f"its last leader epoch {last} is outside the lineage's epochs "
                f"{keys[0]}..{keys[-1]}")
    first = next(e for e, _ in own if e >= keys[0])
    for i, (epoch, start) in enumerate(own):
        if epoch < first:
            continue
        if epoch not in lead:
            return f"its leader epoch {epoch} is not in the lineage {_text(lineage)}"
        k = keys.index(epoch)
        if epoch == first and k > 0 and start < lead[epoch]:
            return (f"its epoch {epoch} starts at {start}, before the lineage's {lead[epoch]}")
        following = lineage[k + 1] if k + 1 < len(lineage) else None
        if epoch == last and following is not None and m.end_offset > following[1] - 1:
            return (f"it ends at {m.end_offset}, past epoch {epoch}'s last offset "
                    f"{following[1] - 1} in the lineage")
        if epoch != last and following != own[i + 1]:
            return (f"after epoch {epoch} it has epoch {own[i + 1][0]} from {own[i + 1][1]}, "
                    f"the lineage {_text([following])}")
    if log_end_offset is not None and m.end_offset >= log_end_offset:
        return f"it ends at {m.end_offset}, at or past the log end offset {log_end_offset}"
    return None


def _text(lineage) -> str:
    return ", ".join(f"epoch {e} from {s}" for e, s in lineage)


def derive_lineage(finished: list[RemoteLogSegmentMetadata]) -> tuple:
    """The lineage of the newest leader's copy, extended back (live_segments says how);
    `finished` in replay order (later breaks ties)."""
    if not finished:
        return ()
    seq = {m.segment_id: i for i, m in enumerate(finished)}
    newest = max(finished, key=lambda m: (m.segment_leader_epochs[-1][0], m.end_offset,
                                          seq[m.segment_id]))
    lineage = list(filtered_epochs(newest.segment_leader_epochs))
    by_start = sorted(finished, key=lambda m: m.start_offset)
    starts = [m.start_offset for m in by_start]
    reach = list(accumulate((m.end_offset for m in by_start), max))
    while True:
        first_epoch, first = lineage[0]
        best = None
        for j in range(bisect.bisect_left(starts, first) - 1, -1, -1):
            if best is not None and best[0][0] and reach[j] < first - 1:
                break          # no copy from here down holds offset first - 1
            m = by_start[j]
            upto = min(m.end_offset, first - 1)
            epoch = _epoch_at(m, upto)
            if epoch > first_epoch:
                continue       # a later epoch below the lineage's start: another branch
            key = (m.end_offset >= first - 1, epoch, upto, seq[m.segment_id])
            if best is None or key > best[0]:
                best = (key, m)
        if best is None:
            return tuple(lineage)
        head = [(e, s) for e, s in filtered_epochs(best[1].segment_leader_epochs) if s < first]
        if head[-1][0] == first_epoch:
            lineage[0] = (first_epoch, head.pop()[1])
        lineage[:0] = head


def resolve(valid: dict, entries: dict, referenced: set, lineage, log_end_offset: int | None,
            outside: tuple) -> LiveSegments:
    """The offsets each valid copy serves: per lineage epoch, the floor entry among the copies
    the cache kept for the epoch (`entries`: epoch -> [(start in epoch, id)] ascending), up to
    the copy's end in that epoch."""
    pieces = []
    for k, (epoch, low) in enumerate(lineage):
        if k + 1 < len(lineage):
            high = lineage[k + 1][1] - 1
        else:
            high = _NO_END if log_end_offset is None else log_end_offset - 1
        kept = entries.get(epoch, [])
        for j, (start, segment_id) in enumerate(kept):
            taken_over = kept[j + 1][0] - 1 if j + 1 < len(kept) else _NO_END
            # (the lineage's first epoch starts at the log start offset, which DeleteRecords
            # and retention move inside a copy: that copy still starts where its file does)
            first = start if k == 0 else max(start, low)
            last = min(epoch_end(valid[segment_id], epoch), high, taken_over)
            if first <= last:
                pieces.append((first, last, segment_id))
    live: list[LiveSegment] = []
    for first, last, segment_id in sorted(pieces):
        if live and live[-1].segment_id == segment_id and live[-1].last_offset + 1 == first:
            live[-1] = replace(live[-1], last_offset=last)
        else:
            live.append(LiveSegment(valid[segment_id], first, last))
    gaps = tuple((a.last_offset + 1, b.first_offset - 1) for a, b in zip(live, live[1:])
                 if b.first_offset > a.last_offset + 1)
    return LiveSegments(tuple(live), _shadowed(valid, referenced, live), outside, gaps,
                        tuple(lineage))


def _shadowed(valid: dict, referenced: set, live: list[LiveSegment]) -> tuple:
    out = []
    for m in sorted(valid.values(), key=lambda m: m.start_offset):
        served = sorted((p.first_offset, p.last_offset) for p in live
                        if p.segment_id == m.segment_id)
        position = m.start_offset
        for first, last in served + [(m.end_offset + 1, m.end_offset + 1)]:
            if first > position:
                out.append(Shadowed(m, position, first - 1,
                                    _why(m, position, first - 1, referenced, live)))
            position = max(position, last + 1)
    return tuple(out)


def _why(m, first: int, last: int, referenced: set, live: list[LiveSegment]) -> str:
    others = [p.segment_id for p in live if p.segment_id != m.segment_id
              and p.first_offset <= last and p.last_offset >= first]
    if m.segment_id not in referenced:
        why = ("a later copy that starts at or before it and reaches as far replaced it in "
               "the leader-epoch cache")
    elif others:
        why = "a later copy starts inside it, and the floor lookup picks the later copy"
    else:
        why = "no epoch of the lineage reaches these offsets of it"
    return f"{why}; read from {', '.join(others)}" if others else why
