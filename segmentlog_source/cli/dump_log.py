"""`segmentlog dump` of `.log` files and KRaft `.checkpoint` snapshots: batch and record lines.

The text formats are those of DumpLogSegments 4.4 (spec §10.2 describes 4.0's; 4.3 and 4.4
dropped the stray `}` that ended a legacy record line, and print a payload after `| ` when
--skip-record-metadata leaves a null key out). The file is read in bounded chunks by storage's
EntryScan, from whichever file system serves it (local, or an object store for a URI).
"""

from __future__ import annotations

import json
import os
import re
import struct

from ..errors import CorruptDataError, MalformedValueError
from ..format.batch import (INT32_MAX, LOG_OVERHEAD, MIN_LEGACY_MESSAGE_SIZE, TIMESTAMP_TYPE_NAMES,
                            BatchHeader, iter_headers)
from ..format.codecs import decompress
from ..format.control import (ABORT, COMMIT, CONTROL_TYPE_NAMES, KRAFT_VERSION, KRAFT_VOTERS,
                              LEADER_CHANGE, SNAPSHOT_FOOTER, SNAPSHOT_HEADER,
                              parse_control_key, parse_end_txn_marker)
from ..format.java_text import java_utf8
from ..format.message_protocol import ReadFailure, read_message
from ..format.record_decoder import decode_batch
from ..storage.log.entry_scan import EntryScan
from ..format.remote_log_metadata import TOPIC as REMOTE_LOG_METADATA
from ..storage.log.kraft_snapshot import BOOTSTRAP_NAME, SNAPSHOT_NAME, read_kraft_snapshot
from ..values.kafka_internal.kafka_json import struct_json
from ..values.kafka_internal.metadata_messages import CLUSTER_METADATA, VOTERS_RECORD
from ..values.kafka_internal.metadata_records import REDACTED, dump_payload, hides_raw
from ..values.kafka_internal.records import dump_texts
from ..values.kafka_internal.remote_metadata import dump_text as remote_metadata_text
from .dump_context import Dumper

_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")


def java_file(arg: str) -> str:
    """How Java's `new File(arg)` prints: repeated separators collapsed, a trailing one dropped."""
    collapsed = re.sub(r"/+", "/", arg)
    return collapsed[:-1] if len(collapsed) > 1 and collapsed.endswith("/") else collapsed


def java_absolute(shown: str) -> str:
    """`File.getAbsolutePath`: the working directory prepended, nothing else resolved (a URI is
    already absolute)."""
    return shown if shown.startswith("/") or "://" in shown else f"{os.getcwd()}/{shown}"


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def dump_log(d: Dumper, fs, path: str, shown: str) -> None:
    name = fs.basename(shown)
    if name.endswith(".checkpoint"):
        if not _kraft_snapshot_header(d, name, shown):
            return
    else:
        base = d.base_offset_of(fs, shown)
        d.line(f"Log starting offset: {base}")
        d.obj("file", path=shown, type="log", baseOffset=base)
    opts = d.options
    metadata = _is_metadata_file(fs, path)
    scan = _KafkaShallowScan(fs, path)
    previous_offset = -1
    for header, entry in scan:
        if header.end > opts.max_bytes:
            break
        valid = header.crc_is_valid(entry)
        records = None
        if opts.deep or (opts.json and not header.first_offset_known):
            records = _decode(path, header, entry)
            header = records.header  # a legacy wrapper's base offset is its first inner one
        d.line(batch_line(header, valid))
        d.obj("batch", **batch_fields(header, valid))
        d.advance(header.size)
        if not opts.deep:
            continue
        inner = _legacy_inner_checks(header, entry, valid)
        for i, record in enumerate(records.records):
            if previous_offset != -1 and record.offset != previous_offset + 1:
                d.problems.add(d.problems.non_consecutive, java_absolute(shown),
                               (previous_offset, record.offset))
            previous_offset = record.offset
            try:
                _record(d, header, record, inner[i] if inner else None, metadata)
            except CorruptDataError as err:
                raise at_batch(err, path, header) from None
    if scan.invalid_tail is not None and opts.max_bytes == INT32_MAX:
        position, count = scan.invalid_tail
        d.line(f"Found {count} invalid bytes at the end of {name}")
        d.obj("invalidBytes", position=position, count=count)
    if name.endswith(".checkpoint") and opts.max_bytes == INT32_MAX:
        _check_kraft_snapshot(d, fs, path)


def _check_kraft_snapshot(d: Dumper, fs, path: str) -> None:
    """Kafka's dump prints a snapshot whatever its shape; its snapshot reader (and segmentlog)
    refuses one without its header first and footer last, a bad CRC or an offset gap: said on
    stderr, naming the file, byte and offset."""
    try:
        read_kraft_snapshot(fs, path, keep_records=False)
    except CorruptDataError as err:
        d.err.write(f"{err}\n")   # <file> at byte <n>: KRaft snapshot: ... (offset <o>)


class _KafkaShallowScan:
    """The entries of a `.log` up to where Kafka's shallow iterator stops (spec §9.2).

    Kafka ends at an entry that runs past the end of the file before looking at its magic byte
    or trusting its size, so garbage at the end is "invalid bytes at the end", not an error;
    format.batch.parse_header checks those first, so such an error is turned back into the end.
    """

    def __init__(self, fs, path: str):
        self.fs, self.path = fs, path
        self.invalid_tail: tuple[int, int] | None = None  # (position, length)

    def __iter__(self):
        scan = EntryScan(self.fs, self.path, allow_torn_tail=True)
        try:
            yield from scan
        except CorruptDataError as err:
            if err.path != self.path or not self._runs_past_end(err.position):
                raise
            self.invalid_tail = (err.position, self.fs.size(self.path) - err.position)
        else:
            tail = scan.torn_tail
            self.invalid_tail = None if tail is None else (tail.position, tail.length)

    def _runs_past_end(self, position: int | None) -> bool:
        if position is None:
            return False
        head = self.fs.read_range(self.path, position, LOG_OVERHEAD)
        length = int.from_bytes(head[8:12], "big", signed=True)
        return length >= MIN_LEGACY_MESSAGE_SIZE[0] and (
            position + LOG_OVERHEAD + length > self.fs.size(self.path))


def _kraft_snapshot_header(d: Dumper, name: str, shown: str) -> bool:
    if name == BOOTSTRAP_NAME:
        d.line("KRaft bootstrap snapshot")
        d.obj("file", path=shown, type="kraft-snapshot", endOffset=None, epoch=None)
        return True
    match = SNAPSHOT_NAME.match(name)
    if match is None:
        d.err.write(f"Ignoring {shown}: not a KRaft snapshot (<20-digit end offset>-<10-digit "
                    f"epoch>.checkpoint or {BOOTSTRAP_NAME})\n")
        return False
    end_offset, epoch = int(match[1]), int(match[2])
    d.line(f"Snapshot end offset: {end_offset}, epoch: {epoch}")
    d.obj("file", path=shown, type="kraft-snapshot", endOffset=end_offset, epoch=epoch)
    return True


def _decode(path: str, header: BatchHeader, entry):
    try:
        return decode_batch(entry, header, verify_crc=False)
    except CorruptDataError as err:
        raise at_batch(err, path, header) from None


def at_batch(err: CorruptDataError, path: str, header: BatchHeader) -> CorruptDataError:
    """A record-level error placed in the file at its batch, the position the errors
    vocabulary uses for records (decoders may already give it; control parsing gives none)."""
    return CorruptDataError(err.reason, path, header.position)


def batch_line(h: BatchHeader, valid: bool) -> str:
    if h.magic >= 2:
        horizon = (f"OptionalLong[{h.base_timestamp}]" if h.has_delete_horizon
                   else "OptionalLong.empty")
        head = (f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count}"
                f" baseSequence: {h.base_sequence} lastSequence: {h.last_sequence}"
                f" producerId: {h.producer_id} producerEpoch: {h.producer_epoch}"
                f" partitionLeaderEpoch: {h.partition_leader_epoch}"
                f" isTransactional: {java_bool(h.is_transactional)}"
                f" isControl: {java_bool(h.is_control)} deleteHorizonMs: {horizon}")
    else:
        head = f"offset: {h.last_offset}"  # a legacy wrapper's own offset is its last one
    return (f"{head} position: {h.position} {TIMESTAMP_TYPE_NAMES[h.timestamp_type]}: "
            f"{h.max_timestamp} size: {h.size} magic: {h.magic} compresscodec: {h.codec_name} "
            f"crc: {h.crc} isvalid: {java_bool(valid)}")


def batch_fields(h: BatchHeader, valid: bool) -> dict:
    return {"baseOffset": h.base_offset, "lastOffset": h.last_offset,
            "count": h.records_count if h.magic >= 2 else None, "position": h.position,
            "size": h.size, "magic": h.magic, "compresscodec": h.codec_name, "crc": h.crc,
            "isvalid": valid, "isTransactional": h.is_transactional, "isControl": h.is_control,
            "producerId": h.producer_id, "producerEpoch": h.producer_epoch,
            "baseSequence": h.base_sequence, "lastSequence": h.last_sequence,
            "partitionLeaderEpoch": h.partition_leader_epoch,
            "timestampType": TIMESTAMP_TYPE_NAMES[h.timestamp_type],
            "maxTimestamp": h.max_timestamp,
            "deleteHorizonMs": h.base_timestamp if h.has_delete_horizon else None}


def _legacy_inner_checks(h: BatchHeader, entry, valid: bool) -> list[tuple[int, bool]] | None:
    """(crc, CRC valid) for each record of a legacy entry, which its record lines show; None for v2.

    An uncompressed entry is its own record. A compressed wrapper's records are the inner
    messages of its value, whose CRCs format.legacy checks but does not return.
    """
    if h.magic >= 2:
        return None
    if h.codec == 0:
        return [(h.crc, valid)]
    view = memoryview(entry)
    key_at = LOG_OVERHEAD + (14 if h.magic == 1 else 6)  # past crc, magic, attributes[, timestamp]
    key_size = struct.unpack_from(">i", view, key_at)[0]
    value_at = key_at + 4 + max(key_size, 0) + 4
    inner = decompress(h.codec, view[value_at:h.size], magic=h.magic)
    return [(m.crc, m.crc_is_valid(inner[m.position:m.end])) for m in iter_headers(inner)]


def _is_metadata_file(fs, path: str) -> bool:
    """A file of KRaft's metadata: a snapshot, or a segment of a __cluster_metadata partition.
    A local file's directory is the one it resolves to (a bare file name given in the
    partition directory, `./`, `..` or a link to it name the same directory)."""
    if path.endswith(".checkpoint"):
        return True
    if "://" not in path:
        path = os.path.realpath(path)
    return fs.basename(fs.dirname(path)).startswith(CLUSTER_METADATA + "-")


def _record(d: Dumper, h: BatchHeader, record, legacy_check: tuple[int, bool] | None,
            metadata: bool = False) -> None:
    opts = d.options
    ts_type = TIMESTAMP_TYPE_NAMES[h.timestamp_type]
    key_size = -1 if record.key is None else len(record.key)
    value_size = -1 if record.value is None else len(record.value)
    fields = {"offset": record.offset, "timestamp": record.timestamp, "keySize": key_size,
              "valueSize": value_size, "headerKeys": [k for k, _ in record.headers]}
    text, prefix = "", "| "
    if not opts.skip_record_metadata:
        text = (f"| offset: {record.offset} {ts_type}: {record.timestamp} keySize: {key_size}"
                f" valueSize: {value_size}")
        if legacy_check is None:
            # A record's sequence follows the batch's lastSequence rule at its own offset delta.
            sequence = h._replace(last_offset=record.offset).last_sequence
            fields["sequence"] = sequence
            text += f" sequence: {sequence} headerKeys: [{','.join(fields['headerKeys'])}]"
        else:
            fields["crc"], fields["isValid"] = legacy_check
            text += f" isValid: {java_bool(legacy_check[1])} crc: {legacy_check[0]}"
        if h.is_control:
            text += _control(record, fields)
        prefix = " "
    elif h.is_control:
        _control(record, fields)
    if opts.prints_data and not h.is_control:
        if opts.decoder is not None:
            key, value = _decoded(opts.decoder, record)
        else:
            # Kafka's default StringDecoder: UTF-8, malformed input replaced (as Java does).
            key = None if record.key is None else java_utf8(record.key)
            value = None if record.value is None else java_utf8(record.value)
            if metadata and hides_raw(record.value):
                value = REDACTED     # a record with a secret, or undecodable: bytes not shown
        fields["key"], fields["payload"] = key, value
        if key is not None:
            text += f"{prefix}key: {key}"
            prefix = " "
        if value is not None:
            text += f"{prefix}payload: {value}"
    d.line(text)
    d.obj("record", **fields)


def _decoded(topic: str, record) -> tuple[str | None, str | None]:
    """Key and payload text as DumpLogSegments' decoder for `topic` prints them. A record
    without a key ends Kafka's dump with an exception; here it is an error naming the record
    (at_batch places it in the file). Cluster and remote log metadata records print no key."""
    if topic == CLUSTER_METADATA:   # secrets redacted
        return None, dump_payload(record.value, record.offset)
    if topic == REMOTE_LOG_METADATA:
        return None, remote_metadata_text(record.value, record.offset)
    try:
        return dump_texts(topic, record.key, record.value, record.offset)
    except MalformedValueError as err:
        raise CorruptDataError(str(err)) from None


def _control(record, fields: dict) -> str:
    """The control part of a record line (and its JSON fields)."""
    _version, type_id = parse_control_key(record.key)
    fields["controlType"] = CONTROL_TYPE_NAMES[type_id]
    if type_id in (ABORT, COMMIT):
        epoch = parse_end_txn_marker(record.value)[1]
        fields["coordinatorEpoch"] = epoch
        return f" endTxnMarker: {CONTROL_TYPE_NAMES[type_id]} coordinatorEpoch: {epoch}"
    if type_id == LEADER_CHANGE and record.value is not None:
        change = _leader_change(record.value)
        fields["control"] = change
        return f" LeaderChange: {_jackson(change)}"   # Kafka 4.4 prints this one with a colon
    if type_id == KRAFT_VOTERS and record.value is not None:
        text = _voters_json(record.value)
        fields["control"] = json.loads(text)
        return f" KRaftVoters {text}"
    kraft = _kraft_json(type_id, record.value)
    if kraft is not None:
        fields["control"] = kraft
        label = {SNAPSHOT_HEADER: "SnapshotHeader", SNAPSHOT_FOOTER: "SnapshotFooter",
                 KRAFT_VERSION: "KRaftVersion"}[type_id]
        return f" {label} {_jackson(kraft)}"
    raw_type = _INT16.unpack_from(record.key, 2)[0]  # UNKNOWN(7) names the id it did not know
    return f" controlType: {CONTROL_TYPE_NAMES[type_id]}({raw_type})"


def _kraft_json(type_id: int, value) -> dict | None:
    """The JSON Kafka's generated converters print for the small KRaft control records.

    Values are the records' version-0 fields (tagged fields follow and are ignored). KRaft
    voters records are _voters_json's.
    """
    if type_id == KRAFT_VOTERS or value is None:
        return None
    needed = {SNAPSHOT_HEADER: 10, SNAPSHOT_FOOTER: 2, KRAFT_VERSION: 4}.get(type_id)
    if needed is None:
        return None
    if len(value) < needed:
        raise CorruptDataError(f"{CONTROL_TYPE_NAMES[type_id]} control record value has "
                               f"{len(value)} bytes, expected at least {needed}")
    out = {"version": _INT16.unpack_from(value, 0)[0]}
    if type_id == SNAPSHOT_HEADER:
        out["lastContainedLogTimestamp"] = _INT64.unpack_from(value, 2)[0]
    elif type_id == KRAFT_VERSION:
        out["kRaftVersion"] = _INT16.unpack_from(value, 2)[0]
    return out


def _voters_json(value) -> str:
    """A KRAFT_VOTERS control record's value as DumpLogSegments 4.4 prints it: read at version
    0 as Kafka reads it (bytes after it ignored), printed with its own `version` field."""
    data = bytes(value)
    try:
        fields = read_message(VOTERS_RECORD.struct, data, 0, 0, True, False)
    except ReadFailure as failure:
        raise CorruptDataError(f"KRAFT_VOTERS control record value: {failure.where()}: "
                               f"{failure.reason}") from None
    return struct_json(VOTERS_RECORD.struct, fields, max(fields["version"], 0))


def _leader_change(value) -> dict:
    """A KRaft LeaderChange control record (the first record of each leader's epoch in
    __cluster_metadata), as Kafka's JSON converter prints it. Its schema is flexible from
    version 0: compact arrays (unsigned varint length + 1) and a tagged-field count after every
    struct, which Kafka does not print."""
    pos = 0

    def take(fmt: str) -> int:
        nonlocal pos
        if pos + struct.calcsize(fmt) > len(value):
            raise CorruptDataError(f"LeaderChange control record value ends at byte {pos}")
        (out,) = struct.unpack_from(fmt, value, pos)
        pos += struct.calcsize(fmt)
        return out

    def uvarint() -> int:
        shift = out = 0
        while True:
            byte = take(">B")
            out |= (byte & 0x7F) << shift
            if byte < 0x80:
                return out
            shift += 7

    def skip_tagged_fields() -> None:
        nonlocal pos
        for _ in range(uvarint()):
            uvarint()            # tag
            pos += uvarint()     # size, then the field's bytes

    def voters() -> list[dict]:
        out = []
        for _ in range(max(uvarint() - 1, 0)):
            out.append({"voterId": take(">i")})
            skip_tagged_fields()
        return out

    change = {"version": take(">h"), "leaderId": take(">i")}
    change["voters"] = voters()
    change["grantingVoters"] = voters()
    return change


def _jackson(obj: dict) -> str:
    """JSON as Jackson's JsonNode.toString prints it: no spaces."""
    return json.dumps(obj, separators=(",", ":"))
