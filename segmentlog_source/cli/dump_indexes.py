"""`segmentlog dump` of `.index`, `.timeindex`, `.txnindex` and `.snapshot` files (spec §10).

Index entries are read as DumpLogSegments reads them: `file length // entry size` entries,
stopping at the first entry after the first whose relative offset is 0 (zero fill). Each entry
is checked against the segment's `.log` (its name's base offset + `.log`, beside it); what
disagrees goes to the stderr report that dump.py prints at the end.
"""

from __future__ import annotations

from ..errors import BadOptionError, CorruptDataError
from ..format.batch import INT32_MAX, LOG_OVERHEAD, V2_HEADER_SIZE, BatchHeader, parse_header
from ..format.record_decoder import decode_batch
from ..storage.log.entry_scan import EntryScan
from ..storage.log.offset_index import OFFSET_ENTRY, OffsetIndex
from ..storage.log.time_index import TIME_ENTRY, TimeIndex
from ..storage.log_files import INDEX_SUFFIX, LOG_SUFFIX, file_name
from ..storage.txn.producer_state_manager import read_snapshot
from ..storage.txn.transaction_index import TXN_ENTRY_SIZE, parse_txn_index
from .dump_context import Dumper
from .dump_log import at_batch, java_absolute

# Only a header is read at an index position, and DumpLogSegments bounds no declared size there.
ANY_BATCH_SIZE = INT32_MAX + LOG_OVERHEAD


def _sibling(fs, path: str, base_offset: int, suffix: str) -> str:
    return fs.join(fs.dirname(path), file_name(base_offset, suffix))


def _sanity_check(d: Dumper, index, shown: str) -> None:
    index.sanity_check()  # raises CorruptDataError, as Kafka's throws CorruptIndexException
    d.line(f"{shown} passed sanity check.")
    d.obj("sanityCheck", path=shown, passed=True)


def dump_offset_index(d: Dumper, fs, path: str, shown: str) -> None:
    base = d.base_offset_of(fs, shown)
    entries = fs.map_array(path, OFFSET_ENTRY)
    d.obj("file", path=shown, type="index", baseOffset=base, entries=len(entries))
    if len(entries) == 0:
        d.line(f"{shown} is empty.")
        return
    if d.options.index_sanity_check:
        return _sanity_check(d, OffsetIndex.open(path, base, fs), shown)
    log_path = _sibling(fs, path, base, LOG_SUFFIX)
    log = fs.open_read(log_path) if fs.exists(log_path) else None
    if log is None:
        d.err.write(f"Cannot check {shown} against its log: {log_path} does not exist\n")
    try:
        log_size = log.size() if log is not None else 0
        for i, (relative, position) in enumerate(entries.tolist()):
            if i > 0 and relative == 0:
                break
            offset = base + relative
            if log is not None:
                batch = _batch_at(log, log_size, position, d.options.max_message_size)
                found = batch.last_offset if batch is not None else -1
                if found != offset:
                    d.problems.add(d.problems.index_mismatches, java_absolute(shown),
                                   (offset, found))
            if not d.options.verify_index_only:
                d.line(f"offset: {offset} position: {position}")
                d.obj("index", offset=offset, position=position)
    finally:
        if log is not None:
            log.close()


def _batch_at(log, log_size: int, position: int, max_message_size: int) -> BatchHeader | None:
    """The batch at `position` as DumpLogSegments finds it (None: no whole batch there).

    Only its header is read. parse_header gets the room left in the file as its end, so it
    returns a header exactly when the whole batch is in the file.
    """
    if not 0 <= position < log_size:
        return None
    head = log.read_at(position, V2_HEADER_SIZE)
    try:
        header = parse_header(head, 0, log_size - position, base_position=position,
                              max_batch_bytes=ANY_BATCH_SIZE)
    except CorruptDataError as err:
        raise err.located(log.path) from None
    if header is not None and header.size > max_message_size:
        raise BadOptionError("--max-message-size", max_message_size,
                             f"the batch at byte {position} of {log.path} is {header.size} "
                             "bytes; raise --max-message-size to read it")
    return header


def dump_time_index(d: Dumper, fs, path: str, shown: str) -> None:
    base = d.base_offset_of(fs, shown)
    entries = fs.map_array(path, TIME_ENTRY)
    d.obj("file", path=shown, type="timeindex", baseOffset=base, entries=len(entries))
    if d.options.index_sanity_check:
        return _sanity_check(d, TimeIndex.open(path, base, fs), shown)
    log_path = _sibling(fs, path, base, LOG_SUFFIX)
    if not fs.exists(log_path):
        d.err.write(f"Cannot check {shown} against its log: {log_path} does not exist\n")
        log_path = None
    offset_index = OffsetIndex.open(_sibling(fs, path, base, INDEX_SUFFIX), base, fs)
    absolute = java_absolute(shown)
    previous_timestamp = -1
    for i, (timestamp, relative) in enumerate(entries.tolist()):
        if i > 0 and relative == 0:
            break
        offset = base + relative
        if log_path is not None:
            batch, entry = _first_batch_reaching(fs, log_path, offset_index.lookup(offset)[1],
                                                 offset)
            if batch is None or batch.last_offset != offset:
                d.problems.add(d.problems.time_not_found, absolute,
                               (offset, -1 if batch is None else batch.last_offset))
            else:
                try:
                    records = decode_batch(entry, batch, verify_crc=False).records
                except CorruptDataError as err:
                    raise at_batch(err, log_path, batch) from None
                max_timestamp = max((r.timestamp for r in records), default=-1)
                if max_timestamp != timestamp:
                    d.problems.add(d.problems.time_mismatches, absolute, (timestamp, max_timestamp))
                if previous_timestamp >= timestamp:
                    d.problems.add(d.problems.time_out_of_order, absolute,
                                   (timestamp, previous_timestamp))
        if not d.options.verify_index_only:
            d.line(f"timestamp: {timestamp} offset: {offset}")
            d.obj("timeindex", timestamp=timestamp, offset=offset)
        previous_timestamp = timestamp


def _first_batch_reaching(fs, log_path: str, position: int, offset: int):
    """(header, bytes) of the first batch from `position` on whose last offset is >= `offset`."""
    for header, entry in EntryScan(fs, log_path, position, allow_torn_tail=True,
                                   chunk_bytes=64 * 1024):
        if header.last_offset >= offset:
            return header, entry
    return None, None


def dump_txn_index(d: Dumper, fs, path: str, shown: str) -> None:
    data = fs.read_all(path)
    txns = parse_txn_index(data)
    d.obj("file", path=shown, type="txnindex", entries=len(txns))
    for i, txn in enumerate(txns):
        version = data[i * TXN_ENTRY_SIZE]  # AbortedTxn.version() reads the first byte only
        d.line(f"version: {version} producerId: {txn.producer_id} firstOffset: {txn.first_offset}"
               f" lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")
        d.obj("abortedTxn", version=version, producerId=txn.producer_id,
              firstOffset=txn.first_offset, lastOffset=txn.last_offset,
              lastStableOffset=txn.last_stable_offset)


def first_sequence(last_sequence: int, offset_delta: int) -> int:
    """BatchMetadata.firstSeq: DefaultRecordBatch.decrementSequence, wrapping below 0."""
    if last_sequence < offset_delta:
        return INT32_MAX - (offset_delta - last_sequence) + 1
    return last_sequence - offset_delta


def dump_snapshot(d: Dumper, fs, path: str, shown: str) -> None:
    try:
        entries = read_snapshot(path, fs)
    except CorruptDataError as err:
        d.err.write(f"{err}\n")  # Kafka prints a corrupt snapshot's message and goes on
        return
    d.obj("file", path=shown, type="snapshot", entries=len(entries))
    for e in entries:
        txn = e.current_txn_first_offset
        text = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: "
                f"{e.coordinator_epoch} currentTxnFirstOffset: "
                f"{f'OptionalLong[{txn}]' if txn >= 0 else 'OptionalLong.empty'} "
                f"lastTimestamp: {e.last_timestamp}")
        batch = {"firstSequence": None, "lastSequence": None, "lastOffset": None,
                 "offsetDelta": None, "timestamp": None}
        if e.last_offset >= 0:  # a snapshot entry with lastOffset -1 has no batch metadata
            batch = {"firstSequence": first_sequence(e.last_sequence, e.offset_delta),
                     "lastSequence": e.last_sequence, "lastOffset": e.last_offset,
                     "offsetDelta": e.offset_delta, "timestamp": e.last_timestamp}
            # Kafka 4.3+ prints the space before these only when they follow (4.2 always
            # ended the line with it)
            text += " " + " ".join(f"{k}: {v}" for k, v in batch.items())
        d.line(text)
        d.obj("producer", producerId=e.producer_id, producerEpoch=e.producer_epoch,
              coordinatorEpoch=e.coordinator_epoch,
              currentTxnFirstOffset=txn if txn >= 0 else None, lastTimestamp=e.last_timestamp,
              **batch)
