"""What a batch says about its records without decoding them: the first record's offset and
timestamp, and how many records it holds, from its header where the header can tell.

The header cannot tell for a legacy compressed wrapper (its header carries the last offset,
and the records are inside its compressed payload) nor for a compacted batch with a delete
horizon (its base timestamp is the horizon, not the first record's): those batches' bytes are
decoded. Shared by the header scan behind `segmentlog stats` (log_summary.py) and the
metadata views (spark/metadata_views.py).
"""

from __future__ import annotations

from ...errors import CorruptDataError
from ...format.batch import LOG_APPEND_TIME, BatchHeader


def needs_body(header: BatchHeader) -> bool:
    """Whether first_record or record_count must read the batch's bytes: a legacy compressed
    wrapper, or a batch the cleaner shaped (a delete horizon for a base timestamp, or fewer
    records than offsets: its first record may lie past its base offset)."""
    if header.magic < 2:
        return header.codec != 0
    return header.has_delete_horizon or header.records_count != (
        header.last_offset - header.base_offset + 1)


def first_record(header: BatchHeader, entry, path: str) -> tuple[int, int]:
    """(offset, timestamp) of the batch's first record; `entry` (the batch's bytes) is used
    only when needs_body(header). A batch the cleaner emptied gives its base offset and -1."""
    if not needs_body(header):
        if header.magic >= 2 and header.timestamp_type == LOG_APPEND_TIME:
            return header.base_offset, header.max_timestamp   # every record's timestamp
        return header.base_offset, header.base_timestamp
    records = decode(header, entry, path).records
    if not records:
        return header.base_offset, -1
    return records[0].offset, records[0].timestamp


def record_count(header: BatchHeader, entry, path: str) -> int:
    """Records in the batch, control records included; `entry` is used only when
    needs_body(header). A v2 count is the header's recordsCount (CRC-covered: check the CRC
    first where it matters)."""
    if header.magic >= 2:
        return header.records_count
    if header.codec == 0:
        return 1
    return len(decode(header, entry, path).records)


def decode(header: BatchHeader, entry, path: str):
    """The batch decoded (no CRC check: the caller's), errors located in `path`."""
    # the decoder needs the numba kernels: load them only when a batch must be decoded
    from ...format.record_decoder import decode_batch

    try:
        return decode_batch(entry, header, verify_crc=False)
    except CorruptDataError as err:
        raise err.located(path) from None
