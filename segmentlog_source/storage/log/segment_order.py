"""The order of a partition's segments, confirmed by their batches.

A segment's file name is its base offset, and nothing covers it: a renamed or lost file
changes which offsets a lookup by timestamp passes over. Lookups judge segments by their
largest timestamp, which need not grow from one segment to the next, so one may answer
without opening the segments after it; these checks make a wrong name an error instead.
"""

from __future__ import annotations

from ...errors import CorruptDataError, DataLossError
from ...format.batch import V2_HEADER_SIZE
from .batch_sequence import shaped_by_cleaner
from .log_segment import CONFIRMING_READ_BYTES
from .time_index import TIME_ENTRY_SIZE


def check_segment_order(segments, after=None) -> bool:
    """Each segment's first batch lies at or above its base offset and below the next
    segment's (`after` follows the last one): one header per segment. Any file renamed out of
    its place breaks one of the two bounds (holding offsets below its new name, or at or past
    its new successor's); compaction, which leaves a first batch above the base, breaks
    neither. Returns whether any of those batches shows the cleaner's hand (above its base,
    or shaped by it)."""
    cleaned = False
    for segment, following in zip(segments, list(segments[1:]) + [after]):
        if segment.vouched is not None or segment.size == 0:
            continue      # (a remote copy's offsets are its CRC-covered metadata's)
        scan = segment.iter_headers(chunk_bytes=V2_HEADER_SIZE, allow_torn_tail=segment.active)
        header = next(iter(scan), (None,))[0]
        if header is None:
            continue
        first = header.base_offset if header.first_offset_known else header.last_offset
        cleaned = cleaned or first > segment.base_offset or shaped_by_cleaner(header)
        if first < segment.base_offset:
            bound = f"below the segment's base offset {segment.base_offset} (its file name)"
        elif following is not None and first >= following.base_offset:
            bound = (f"at or past the next segment's base offset {following.base_offset} "
                     f"({following.log_path})")
        else:
            continue
        raise CorruptDataError(f"the first batch holds offsets {first}..{header.last_offset}, "
                               f"{bound}: a renamed segment?", segment.log_path, 0)
    return cleaned


def confirm_names(segments, confirmed: int, want: int, fs, window: int) -> tuple[int, bool]:
    """check_segment_order on segments[confirmed:want], the first `confirmed` being done
    already, and on more to make a window of at least `window`: (how many are confirmed now,
    whether the cleaner's hand showed).

    A lookup by timestamp confirms the names of the segments it passes over and of the one it
    answers from, as it goes, and that each segment it passes over ends where the next begins
    (PartitionLog.pass_over): a segment renamed away from among them leaves a hole there, one
    renamed into them breaks a name, and one past them is read by no range that it could
    change. So the year of segments after a range costs no request. The cleaner's gaps would
    hide a hole: where it has been (the partition says so, or a first batch shows it), the
    caller confirms every name."""
    count = len(segments)
    if want < count:     # (a lookup goes on: the next window's headers in one go)
        want = min(count, max(want, confirmed + window))
    batch = segments[confirmed:want]
    # (object stores: the window's first headers, read in parallel beforehand; a segment of
    # a few KiB whole, in the same one request: a lookup passing over it reads its last
    # batches next, to confirm its largest timestamp)
    probed = [s for s in batch if s.vouched is None]
    small = [s for s in probed if s.size <= CONFIRMING_READ_BYTES] if fs.warms_ranges else []
    fs.prefetch(s.log_path for s in small)
    fs.prefetch((s.log_path for s in probed if s not in small), head_bytes=V2_HEADER_SIZE)
    cleaned = check_segment_order(batch, segments[want] if want < count else None)
    return want, cleaned


def check_passed_over(before, segment, name: str, compacted: bool,
                      dirty_from: int | None = None) -> None:
    """A lookup by timestamp that passed over `before` answers from `segment`: offsets
    missing between the two (a lost segment) could have held the answer. (The cleaner leaves
    such gaps, but none reaching past the first dirty offset, `dirty_from`.)"""
    end = before.next_offset_seen()
    cleaners = compacted and (dirty_from is None or segment.base_offset <= dirty_from)
    if end < segment.base_offset and not cleaners:
        raise DataLossError(f"offsets {end}..{segment.base_offset - 1} of {name} are missing "
                            f"between {before.log_path} and {segment.log_path}: a lookup by "
                            f"timestamp cannot tell whether the answer was there")


def check_meets_next(segment, following) -> None:
    """The segment a lookup answers from ends below the next one's base offset: one that runs
    past it says a file name is wrong (a renamed segment holding earlier offsets)."""
    end = segment.next_offset_seen()
    if end > following.base_offset:
        raise CorruptDataError(f"the segment's batches run to offset {end - 1}, past the next "
                               f"segment's base offset {following.base_offset} "
                               f"({following.log_path})", segment.log_path, None)


def check_last_time_entry(segment) -> None:
    """A segment judged by its batches (LogSegment.judged_by_batches) whose time index is read
    after all, to answer a lookup from or to skip on its entries (the time floor): its last
    entry is checked as it is where a lookup judges by it (max_timestamp_and_offset), against
    the batches read already: the batch holding its offset has its timestamp, and that is the
    segment's largest."""
    if not len(segment.time_index):
        return
    timestamp, offset = segment.time_index.last_entry()
    at = (len(segment.time_index) - 1) * TIME_ENTRY_SIZE
    largest = segment.max_timestamp_and_offset[0]
    holder = next((h for h, _ in segment.iter_headers() if h.last_offset >= offset), None)
    if holder is None or (holder.first_offset_known and holder.base_offset > offset):
        raise CorruptDataError(f"time index entry ({timestamp}, {offset}) names an offset no "
                               f"batch holds", segment.time_index_path, at)
    if holder.max_timestamp != timestamp or timestamp != largest:
        raise CorruptDataError(
            f"the last time index entry ({timestamp}, {offset}) disagrees with the batches of "
            f"{segment.log_path}: the one holding offset {offset} (at byte {holder.position}) "
            f"has largest timestamp {holder.max_timestamp}, the segment {largest}",
            segment.time_index_path, at)
