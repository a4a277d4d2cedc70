"""Producer state and its `<offset>.snapshot` files (spec §6).

Snapshot layout, version 1, big-endian::

    off size field
      0   2  version (1)
      2   4  crc: CRC-32C of bytes [6, end)
      6   4  entryCount
     10  46  per producer: producerId int64, epoch int16, lastSequence int32, lastOffset int64
             (-1: no batch metadata), offsetDelta int32, timestamp int64, coordinatorEpoch int32,
             currentTxnFirstOffset int64 (-1: no open transaction)

The file name is the map end offset: the offset after the last batch the state covers. The
state follows `ProducerAppendInfo`: a v2 data batch with a producer id records its last sequence,
offset and timestamp and may open a transaction; an end-transaction marker closes it.
"""

from __future__ import annotations

from dataclasses import dataclass
import struct

from crc32c import crc32c

from ...errors import CorruptDataError
from ...format.batch import BatchHeader
from ..io.local import LOCAL
from ..log_files import SNAPSHOT_SUFFIX, file_name, kind_of
from .transaction_index import AbortedTxn

SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
SNAPSHOT_HEADER_SIZE = _HEADER.size   # 10
SNAPSHOT_ENTRY_SIZE = _ENTRY.size     # 46
_CRC_START = 6


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = -1
    last_sequence: int = -1
    last_offset: int = -1           # last data offset; -1 = no batch metadata
    offset_delta: int = 0
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    def pack(self) -> bytes:
        return _ENTRY.pack(self.producer_id, self.producer_epoch, self.last_sequence,
                           self.last_offset, self.offset_delta, self.last_timestamp,
                           self.coordinator_epoch, self.current_txn_first_offset)

    def _bump_epoch(self, epoch: int) -> None:
        # A new epoch forgets the batch metadata of the old one (maybeUpdateProducerEpoch).
        if epoch != self.producer_epoch:
            self.producer_epoch = epoch
            self.last_sequence, self.last_offset, self.offset_delta = -1, -1, 0


def parse_snapshot(data: bytes, path: str | None = None) -> list[ProducerStateEntry]:
    if len(data) < SNAPSHOT_HEADER_SIZE:
        raise CorruptDataError(f"producer snapshot of {len(data)} bytes is shorter than its "
                               f"{SNAPSHOT_HEADER_SIZE}-byte header", path, 0)
    version, crc, count = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptDataError(f"unknown producer snapshot version {version}", path, 0)
    computed = crc32c(data[_CRC_START:])
    if computed != crc:
        raise CorruptDataError(f"producer snapshot CRC mismatch: stored {crc}, computed {computed}",
                               path, 2)
    if count < 0 or len(data) != SNAPSHOT_HEADER_SIZE + count * SNAPSHOT_ENTRY_SIZE:
        raise CorruptDataError(f"producer snapshot of {len(data)} bytes cannot hold {count} "
                               f"entries", path, 6)
    return [ProducerStateEntry(*_ENTRY.unpack_from(data, SNAPSHOT_HEADER_SIZE + i * _ENTRY.size))
            for i in range(count)]


def snapshot_bytes(entries: list[ProducerStateEntry]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(e.pack() for e in entries)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body


def java_hash_map_order(producer_ids: list[int]) -> list[int]:
    """The order in which a Java `HashMap<Long, _>` filled in this order iterates: by bucket,
    then by insertion.

    The broker writes snapshot entries in that order; emulating it makes our snapshots match the
    broker's byte for byte in the usual case (no tree bins, map never larger than now).
    """
    capacity = 16
    while len(producer_ids) > capacity * 3 // 4:
        capacity *= 2

    def bucket(pid: int) -> int:
        value = pid & 0xFFFFFFFFFFFFFFFF
        h = (value ^ (value >> 32)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    ranked = sorted((bucket(pid), i, pid) for i, pid in enumerate(producer_ids))
    return [pid for _, _, pid in ranked]


class ProducerStateManager:
    """The broker's producer table for one partition, fed batch by batch in offset order."""

    def __init__(self, entries: list[ProducerStateEntry] | None = None, map_end_offset: int = 0):
        self.producers: dict[int, ProducerStateEntry] = {e.producer_id: e for e in entries or []}
        self.map_end_offset = map_end_offset

    def ongoing_txn_first_offsets(self) -> list[tuple[int, int]]:
        """(first offset, producer id) of open transactions, oldest first."""
        return sorted((e.current_txn_first_offset, e.producer_id)
                      for e in self.producers.values() if e.current_txn_first_offset >= 0)

    def first_unstable_offset(self) -> int | None:
        ongoing = self.ongoing_txn_first_offsets()
        return ongoing[0][0] if ongoing else None

    def update(self, header: BatchHeader, marker: tuple[bool, int, int] | None = None
               ) -> AbortedTxn | None:
        """Apply one batch; returns the aborted-transaction index entry an ABORT marker makes.

        `marker` is (is_abort, coordinator_epoch, record timestamp) for a control batch holding
        an end-transaction marker (None for other batches).
        """
        self.map_end_offset = max(self.map_end_offset, header.next_offset)
        if header.magic < 2 or header.producer_id < 0:
            return None
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = self.producers[header.producer_id] = ProducerStateEntry(header.producer_id)
        if header.is_control:
            if marker is None:
                return None  # an empty control batch: the cleaner removed the marker
            return self._end_txn(entry, header, *marker)
        entry._bump_epoch(header.producer_epoch)
        entry.last_sequence = header.last_sequence
        entry.last_offset = header.last_offset
        entry.offset_delta = header.last_offset - header.base_offset
        entry.last_timestamp = header.max_timestamp
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = header.base_offset
        return None

    def _end_txn(self, entry: ProducerStateEntry, header: BatchHeader, is_abort: bool,
                 coordinator_epoch: int, timestamp: int) -> AbortedTxn | None:
        aborted = None
        if entry.current_txn_first_offset >= 0 and is_abort:
            # LSO at the abort: the oldest *other* open transaction, else just past the marker.
            others = [first for first, pid in self.ongoing_txn_first_offsets()
                      if pid != entry.producer_id]
            lso = others[0] if others else header.base_offset + 1
            aborted = AbortedTxn(entry.producer_id, entry.current_txn_first_offset,
                                 header.base_offset, lso)
        entry._bump_epoch(header.producer_epoch)
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        return aborted

    def to_snapshot(self) -> bytes:
        order = java_hash_map_order(list(self.producers))
        return snapshot_bytes([self.producers[pid] for pid in order])


# -- snapshot files --------------------------------------------------------------------------

def snapshot_offsets(directory: str, fs=LOCAL) -> list[int]:
    """Offsets of the `<offset>.snapshot` files in a partition directory, ascending."""
    found = []
    for name in fs.list_dir(directory):
        kind = kind_of(name)
        if kind is not None and kind[1] == SNAPSHOT_SUFFIX:
            found.append(kind[0])
    return sorted(found)


def snapshot_path(directory: str, offset: int, fs=LOCAL) -> str:
    return fs.join(directory, file_name(offset, SNAPSHOT_SUFFIX))


def read_snapshot(path: str, fs=LOCAL) -> list[ProducerStateEntry]:
    return parse_snapshot(fs.read_all(path), path)


def write_snapshot(directory: str, state: ProducerStateManager, fs=LOCAL,
                   fsync: bool = False) -> str:
    """Write `<map end offset>.snapshot` atomically; the broker fsyncs roll snapshots later."""
    path = snapshot_path(directory, state.map_end_offset, fs)
    fs.write_atomic(path, state.to_snapshot(), fsync=fsync)
    return path


def read_end_txn_marker(header: BatchHeader, entry) -> tuple[bool, int, int] | None:
    """(is_abort, coordinator_epoch, timestamp) of a control batch's end-transaction marker, or
    None when the batch holds no marker (emptied by the cleaner, or another control type)."""
    from ...format.control import ABORT, COMMIT, parse_control_record
    from ...format.record_decoder import decode_batch

    records = decode_batch(entry, header, verify_crc=False).records
    if not records:
        return None
    control = parse_control_record(records[0].key, records[0].value)
    if control.type not in (ABORT, COMMIT):
        return None
    return control.type == ABORT, control.coordinator_epoch, records[0].timestamp


def checked_end_txn_marker(header: BatchHeader, entry) -> tuple[bool, int, int] | None:
    """read_end_txn_marker for a reader that drops batches on the strength of it. In a data
    partition a control batch is a transaction's end marker: written for a transactional
    producer (id >= 0), holding one ABORT or COMMIT record (none once the cleaner emptied it).
    Anything else, a data batch whose control bit was set among them, is corrupt; errors are
    located at the batch (header.position)."""
    from ...format.control import ABORT, COMMIT, CONTROL_TYPE_NAMES, parse_control_record
    from ...format.record_decoder import decode_batch

    where = header.position
    if header.magic < 2 or not header.is_transactional or header.producer_id < 0 \
            or header.records_count not in (0, 1):
        raise CorruptDataError(
            f"a control batch of {header.records_count} records, producer id "
            f"{header.producer_id}{'' if header.is_transactional else ', not transactional'}: "
            f"not a transaction marker", None, where)
    records = decode_batch(entry, header, verify_crc=False).records
    if not records:
        return None
    try:
        control = parse_control_record(records[0].key, records[0].value)
    except CorruptDataError as err:
        raise CorruptDataError(err.reason, None, where) from None
    if control.type not in (ABORT, COMMIT):
        raise CorruptDataError(f"a {CONTROL_TYPE_NAMES[control.type]} control record in a data "
                               f"partition (only transaction markers belong there)", None, where)
    return control.type == ABORT, control.coordinator_epoch, records[0].timestamp
