"""Rewriting one batch with only some of its records, as the log cleaner does
(Kafka's MemoryRecords.filterTo; spec §2.5, §2.8, §12.1).

- Every record kept and no delete horizon to set: the original bytes, unchanged.
- Some records kept: a new batch of those records with the original baseOffset and
  lastOffsetDelta (offsets are never renumbered, so the last offset and the producer's last
  sequence survive), producer id, epoch, base sequence, leader epoch, flags and codec (at its
  default level). baseTimestamp is the first kept record's timestamp, or the delete horizon
  when one is set (attribute bit 6); record deltas are taken from it.
- No record kept: nothing, or, when the batch holds a producer's last sequence, the 61-byte
  empty batch (codec none, baseTimestamp -1, the original maxTimestamp).

Legacy entries (magic 0 and 1) carry no producer state: they are kept whole or dropped whole;
rewriting part of a legacy compressed message set is refused with an error naming it.
"""

from __future__ import annotations

import numpy as np

from ..errors import SegmentLogError
from .batch import LOG_APPEND_TIME, BatchHeader
from .record_encoder import encode_batch
from .records import RecordColumns, take_rows


def filter_batch(header: BatchHeader, entry, columns: RecordColumns | None, keep: np.ndarray,
                 *, retain_empty: bool = False, delete_horizon: int | None = None
                 ) -> bytes | None:
    """The batch with only the records where `keep` is True (see the module docstring).

    `columns`: the batch's decoded records (needed only when it must be rebuilt);
    `delete_horizon`: a horizon to set now (the batch has none yet and keeps a tombstone or is
    the marker of an emptied transaction).
    """
    kept = int(np.count_nonzero(keep))
    if kept == 0 and (not retain_empty or header.magic < 2):
        return None
    if kept == len(keep) and delete_horizon is None:
        return bytes(entry)
    if header.magic < 2:
        raise SegmentLogError(f"the legacy (magic {header.magic}) message set at offset "
                              f"{header.base_offset} keeps {kept} of its {len(keep)} records: "
                              "rewriting part of a legacy message set is not supported")
    log_append_time = header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME else None
    fields = dict(base_offset=header.base_offset, last_offset=header.last_offset,
                  partition_leader_epoch=header.partition_leader_epoch,
                  producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                  base_sequence=header.base_sequence,
                  is_transactional=header.is_transactional, is_control=header.is_control,
                  log_append_time=log_append_time)
    if kept == 0:
        return encode_batch([], max_timestamp=header.max_timestamp, **fields)
    if delete_horizon is None and header.has_delete_horizon:
        delete_horizon = header.base_timestamp
    return encode_batch(columns=take_rows(columns, np.flatnonzero(keep)),
                        delete_horizon=delete_horizon, codec=header.codec, **fields)
