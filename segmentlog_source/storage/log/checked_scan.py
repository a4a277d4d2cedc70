"""A range of a segment read for its records: every batch checked against its neighbours before
anyone uses it, and, when asked to salvage, damage skipped instead of ending the read.

`EntryScan` frames the bytes; this adds what a reader must know before it trusts a batch:
its offsets follow the batch before and precede the batch after (batch_sequence.py), so a batch
is handed out only once its successor (or whatever follows the range) has been seen. (The CRC
stays the reader's to check: the decoder checks what it decodes, and whatever a reader skips on
the strength of a CRC-covered field, it must check first.) With `bodies=False` the scan reads
headers only (the entry is None), except a legacy compressed wrapper's, whose first offset is
inside its payload: the metadata views' reads with verifyChecksums=false.

Salvaging (a reader's failOnDataLoss=false), a damaged batch is skipped, not the rest of the
range: framing damage makes the scan resynchronise at the next position where a whole batch with
a valid CRC starts; a batch whose offsets clash with a neighbour's is dropped together with that
neighbour (either may be the one whose base offset moved); each skip is reported (`skipped`).
"""

from __future__ import annotations

import logging
from typing import Iterator, NamedTuple

from ...errors import CorruptDataError, DataLossError, FileChangedError
from ...format.batch import DEFAULT_MAX_BATCH_BYTES, BatchHeader
from ...format.legacy import decode_legacy_entry
from .batch_sequence import BatchSequence
from .entry_scan import DEFAULT_CHUNK_BYTES, EntryScan
from .resync import find_next_batch, whole_entry_at

log = logging.getLogger("segmentlog")

class Skipped(NamedTuple):
    """Bytes of a segment a salvaging read left out, and why."""

    path: str
    start: int
    end: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path} bytes {self.start}..{self.end}: {self.reason}"


class _Held(NamedTuple):
    """A batch waiting for what follows it: `before` is its predecessor's last offset, and
    `vouched` says the predecessor confirmed its offsets (it starts right after it)."""

    header: BatchHeader
    entry: memoryview
    before: int
    vouched: bool
    resynced: bool = False

    def crc_ok(self) -> bool:
        return self.header.crc_is_valid(self.entry)


class CheckedScan:
    """(header, entry) of each batch in [start, end) of `path` that its neighbours vouch for.

    `after_offset`, `start_checked`, `ends_segment`, `next_segment_base` and `compacted` say
    what lies around the range (plan.scan_plan.ScanTask). `offset_limit` is the offset the plan
    says the range's batches stay below: a batch inside the range at or past it is corrupt (its
    base offset moved), never a reason to stop quietly.
    """

    def __init__(self, fs, path: str, start: int, end: int, *, segment_base: int,
                 after_offset: int | None = None, start_checked: bool = True,
                 ends_segment: bool = True, next_segment_base: int | None = None,
                 compacted: bool = False, dirty_from: int | None = None,
                 indexed_last_offset: int | None = None,
                 named_offsets: tuple[int, ...] = (),
                 verify_crc: bool = True, salvage: bool = False,
                 offset_limit: int | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES, stats=None,
                 expected_size: int | None = None, bodies: bool = True,
                 next_segment_path: str | None = None, prefetched=None):
        if verify_crc and not bodies:
            raise ValueError("verifying CRCs needs the batch bodies")
        self.fs, self.path, self.start, self.end = fs, path, start, end
        self.ends_segment, self.next_segment_base = ends_segment, next_segment_base
        self.indexed_last_offset, self.named_offsets = indexed_last_offset, named_offsets
        self.verify_crc, self.salvage, self.offset_limit = verify_crc, salvage, offset_limit
        self.chunk_bytes, self.max_batch_bytes = chunk_bytes, max_batch_bytes
        self.stats, self.expected_size, self.bodies = stats, expected_size, bodies
        self.sequence = BatchSequence(path, segment_base, after_offset, compacted=compacted,
                                      start_checked=start_checked,
                                      next_segment_base=next_segment_base,
                                      dirty_from=dirty_from,
                                      next_segment_path=next_segment_path)
        self.skipped: list[Skipped] = []
        self.resynced = False
        self.prefetched = prefetched    # bytes from `start` on, read already (walked_scan.py)

    # -- the scan ----------------------------------------------------------------------------
    def __iter__(self) -> Iterator[tuple[BatchHeader, memoryview]]:
        seq = self.sequence
        held: _Held | None = None        # the batch waiting for its successor's check
        position = self.start
        while True:
            scan = EntryScan(self.fs, self.path, position, self.end, chunk_bytes=self.chunk_bytes,
                             max_batch_bytes=self.max_batch_bytes, stats=self.stats,
                             expected_size=self.expected_size, allow_torn_tail=self.salvage,
                             read_following=not self.ends_segment, bodies=self.bodies,
                             prefetched=self.prefetched)
            self.prefetched = None
            try:
                for header, entry in scan:
                    if entry is None and not header.first_offset_known:
                        entry = self._read_entry(header)
                    first = self._first_offset(header, entry)
                    if first is None:    # salvaging: a framed batch that does not decode
                        continue
                    before, vouched = seq.previous_last, not seq.unchecked
                    try:
                        past = self._past_limit(header, first)
                        seq.add(header, first)
                    except CorruptDataError as err:
                        held = self._clash(err, held, header, entry)
                        continue
                    if self._suspect_after_gap(header, before):
                        continue
                    if held is not None and first > before + 1 and not self.verify_crc:
                        held = self._checked_before_gap(held)
                    if held is not None and not self._unconfirmed_in_gap(held, first):
                        yield held.header, held.entry
                    if past:    # checked as a neighbour, not read
                        held = None
                        continue
                    vouched = vouched and first == before + 1 and not self.resynced
                    held = _Held(header, entry, before, vouched, self.resynced)
                    self.resynced = False
            except FileChangedError:
                raise
            except CorruptDataError as err:
                if not self.salvage or err.path != self.path or err.position is None:
                    raise
                # the framing broke: resume at the next whole batch with a valid CRC, if any
                held = self._keep_if_vouched(held, "the bytes after it are damaged")
                resume = self._resume_after(err.position)
                self._skip(err.position, self.end if resume is None else resume, err.reason)
                seq.expect_gap()
                if resume is None:
                    break
                # (a batch found by its CRC alone, maybe one nested in a damaged wrapper, is
                # trusted only once what follows it confirms it)
                position, self.resynced = resume, True
                continue
            if scan.torn_tail is not None:
                tail = scan.torn_tail
                self._skip(tail.position, tail.position + tail.length,
                           "a torn tail: the last bytes of the file are not a whole batch")
                seq.expect_gap()
            break
        if held is not None and held.resynced and not self._followed(scan) \
                and not self._indexes_name(held.header):
            # found by its CRC alone (its offsets are outside the CRC) with nothing after it,
            # nor the segment's indexes, to confirm them
            held = self._keep_if_vouched(held, "found after damage, and nothing after it "
                                         "confirms its offsets")
        try:
            self._check_what_follows(scan)
            seq.finish()
        except DataLossError as err:   # offsets missing after this segment
            if not self.salvage:
                self._raise_if_damaged(held)    # a grown length swallowed them?
                raise
            log.warning("segmentlog: %s", err)
            if self._indexes_reach_past():
                # the tail is missing, or the last batch's base offset moved down: only a
                # predecessor that vouches for it tells which
                held = self._keep_if_vouched(held, "the segment's indexes name later offsets")
        except CorruptDataError as err:
            if not self.salvage:
                self._raise_if_damaged(held)
                raise
            held = self._keep_if_vouched(held, err.reason)
        if held is not None and not self.verify_crc and self.sequence.in_cleaned_part:
            held = self._checked_before_gap(held)    # whatever follows may lie past a gap
        if held is not None:
            yield held.header, held.entry

    def _first_offset(self, header: BatchHeader, entry) -> int | None:
        """The batch's first offset; None (salvaging) when it is a legacy wrapper that does not
        decode: it is skipped whole, the framing being intact (no resynchronising inside it)."""
        if header.first_offset_known:
            return header.base_offset
        try:   # a legacy compressed wrapper: its first offset is inside the compressed payload
            return decode_legacy_entry(entry, header, verify_crc=self.verify_crc)[0]
        except CorruptDataError as err:
            if not self.salvage:
                raise err.located(self.path) from None
            self._skip(header.position, header.end, err.reason)
            self.sequence.expect_gap()
            return None

    def _checked_before_gap(self, held: _Held) -> _Held | None:
        """Without CRCs, a gap the cleaner may have left can also hide a batch whose length
        (no CRC covers it) grew to swallow the next one (a codec ignores the bytes after its
        stream, so decoding does not notice either): the batch before a gap has its CRC,
        which covers its own span only, checked (read whole first when reading headers)."""
        entry = held.entry if held.entry is not None else self._read_entry(held.header)
        if held.header.crc_is_valid(entry):
            return held
        err = self._crc_error(held.header, entry)
        if not self.salvage:
            raise err
        self._skip(held.header.position, held.header.end, err.reason)
        self.sequence.expect_gap()
        return None

    def _read_entry(self, header: BatchHeader) -> memoryview:
        with self.fs.open_read(self.path, self.stats) as f:
            data = f.read_at(header.position, header.size)
        if len(data) < header.size:
            raise CorruptDataError(f"file shrank while being read (expected {header.size} "
                                   f"bytes)", self.path, header.position)
        return memoryview(data)

    def _resume_after(self, damaged: int) -> int | None:
        """Where to go on after the entry at `damaged` failed to frame: where its own length
        says the next entry starts, if a whole one with a valid CRC is there (most damage
        spares the length); else the next such position found by scanning."""
        with self.fs.open_read(self.path, self.stats) as f:
            head = f.read_at(damaged, 12)
        if len(head) == 12:
            declared = damaged + 12 + int.from_bytes(head[8:12], "big", signed=True)
            if damaged < declared < self.end and whole_entry_at(self.fs, self.path, declared,
                                                                self.end, self.stats):
                return declared
        return find_next_batch(self.fs, self.path, damaged + 1, self.end, self.max_batch_bytes,
                               self.stats)

    def _past_limit(self, header: BatchHeader, first: int) -> bool:
        """Whether the batch lies past the offsets the plan says the range stays below: only
        the range's last batch may, when it is a legacy compressed wrapper (the planner cannot
        tell its first offset from its header, so it reads the wrapper holding the range's end
        in case it starts below it); any other batch there is corrupt (its base offset moved)."""
        if self.offset_limit is None or first < self.offset_limit:
            return False
        if not header.first_offset_known and header.end == self.end:
            return True
        raise CorruptDataError(f"batch offsets {first}..{header.last_offset} lie at or past "
                               f"{self.offset_limit}, where the plan says this range ends "
                               f"(a base offset was changed?)", self.path, header.position)

    def _suspect_after_gap(self, header: BatchHeader, before: int) -> bool:
        """Salvaging, a gap in a partition with no sign of compaction is not left for a later
        excuse: the batch after it may be one whose base offset moved up, so it is dropped."""
        seq = self.sequence
        if not (self.salvage and seq.gaps and not seq.gap_excused(seq.gaps[-1])):
            return False
        gap = seq.gaps.pop()
        self._skip(header.position, header.end, f"offsets {gap.first_missing}.."
                   f"{gap.next_offset - 1} are missing before it and the partition shows no "
                   f"sign of compaction (its base offset moved?)")
        seq.rewind(before)
        seq.expect_gap()
        return True

    def _followed(self, scan: EntryScan) -> bool:
        """Whether something after the range checks the last batch's offsets."""
        if self.ends_segment:
            return self.next_segment_base is not None
        return scan.following is not None

    def _unconfirmed_in_gap(self, held: _Held, first: int) -> bool:
        """A batch found by its CRC alone, after damaged bytes, is confirmed by the batch after
        it starting right after it. In a compacted partition the cleaner's gaps let any offsets
        below the next batch's pass; so a gap after such a batch confirms nothing, and it is
        skipped (unless the indexes name its offsets) rather than read at offsets that may have
        moved (baseOffset is outside the CRC)."""
        if not (held.resynced and self.sequence.in_cleaned_part) \
                or self._indexes_name(held.header) \
                or first == held.header.last_offset + 1:
            return False
        self._skip(held.header.position, held.header.end, "unconfirmed: found after damaged "
                   "bytes, and in a compacted partition the gap after it cannot vouch for its "
                   "offsets")
        return True

    def _indexes_name(self, header: BatchHeader) -> bool:
        """Whether an offset the segment's indexes name last lies in this batch."""
        first = header.base_offset if header.first_offset_known else header.last_offset
        return any(first <= named <= header.last_offset for named in self.named_offsets)

    def _indexes_reach_past(self) -> bool:
        return (self.ends_segment and self.indexed_last_offset is not None
                and self.sequence.previous_last < self.indexed_last_offset)

    def _check_what_follows(self, scan: EntryScan) -> None:
        if self.ends_segment:
            last = self.sequence.previous_last
            if self._indexes_reach_past():
                raise DataLossError(f"{self.path}: its indexes name offsets up to "
                                    f"{self.indexed_last_offset}, but its batches end at {last}: "
                                    f"the end of the segment is missing (truncated?)")
            if self.next_segment_base is not None:
                self.sequence.next_offset_is(self.next_segment_base, scan.position,
                                             next_segment=True)
        elif scan.following is not None:
            self.sequence.next_batch(scan.following)

    # -- salvage -------------------------------------------------------------------------------
    def _clash(self, err: CorruptDataError, held: _Held | None, header, entry):
        """A batch whose offsets clash with the one held: raise, or (salvaging) drop the one at
        fault, or both when which cannot be told; returns what is still held.

        The held batch is not at fault when its CRC holds and it followed its own predecessor
        with no gap (a moved base offset would have left one), in a partition that shows no
        sign of compaction; nor is the other when the held batch's CRC fails."""
        seq = self.sequence
        held_bad = held is not None and self.verify_crc and not held.crc_ok()
        if not self.salvage:
            if held_bad:
                raise self._crc_error(held.header, held.entry) from None   # the real culprit
            raise err
        this_bad = self.verify_crc and not header.crc_is_valid(entry)
        if held is not None and not held_bad and (this_bad or (held.vouched and
                                                               not seq.in_cleaned_part)):
            self._skip(header.position, header.end, "CRC mismatch" if this_bad else err.reason)
            seq.rewind(held.header.last_offset)
            seq.expect_gap()
            return held
        if held is not None:
            self._skip(held.header.position, held.header.end,
                       "CRC mismatch" if held_bad else "its offsets clash with the next batch's")
            seq.rewind(held.before)
        self._skip(header.position, header.end, err.reason)
        seq.expect_gap()
        return None

    def _keep_if_vouched(self, held: _Held | None, why: str) -> _Held | None:
        """The held batch's successor is lost: keep it if its predecessor vouched for it."""
        if held is None or (held.vouched and not self.sequence.in_cleaned_part):
            return held
        self._skip(held.header.position, held.header.end, f"unconfirmed: {why}")
        self.sequence.rewind(held.before)
        return None

    def _raise_if_damaged(self, held: _Held | None) -> None:
        """Before blaming what follows the held batch, its own CRC: a failing one is the real
        culprit (without CRCs too, as a grown length reads as a missing or moved successor)."""
        if held is None:
            return
        entry = held.entry if held.entry is not None else self._read_entry(held.header)
        if not held.header.crc_is_valid(entry):
            raise self._crc_error(held.header, entry) from None

    def _crc_error(self, header: BatchHeader, entry) -> CorruptDataError:
        return CorruptDataError(f"CRC mismatch: stored {header.crc}, computed "
                                f"{header.compute_crc(entry)}", self.path, header.position)

    def _skip(self, start: int, end: int, reason: str) -> None:
        skipped = Skipped(self.path, start, max(start, end), reason)
        self.skipped.append(skipped)
        log.warning("segmentlog: skipped %s (failOnDataLoss=false)", skipped)
