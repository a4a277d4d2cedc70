"""Keys and values of `__consumer_offsets` and `__transaction_state` decoded, and printed as
Kafka 4.4's DumpLogSegments prints them with --offsets-decoder / --transaction-log-decoder.

    key     int16 record type | the type's key fields (messages.py, group_messages.py)
    value   int16 version     | the type's value fields at that version; null: a tombstone

Printed, a key is {"type":"<type>","data":{...}} and a value {"version":"<v>","data":{...}}
(Kafka's JSON converters: camelCase names, int64 as numbers, bytes as base64, a tagged field only
when it differs from its default, a field its version lacks left out). Two values are printed
richer: a "consumer" group's member subscription and assignment bytes as the consumer
protocol's JSON (the bytes, base64, when they do not parse), and a transaction's status as its
state's name. A tombstone is <DELETE>; a record Kafka cannot parse is one line saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import BadOptionError, MalformedValueError
from .messages import (ASSIGNMENT, COORDINATORS, SUBSCRIPTION, TRANSACTION_STATES, RecordKind)
from .kafka_json import jackson_string, struct_json
from ...format.message_protocol import Message, ReadFailure, StructValue, read_message

CONSUMER_PROTOCOL = "consumer"


class InternalRecordError(MalformedValueError):
    """A key or value of an internal topic that does not decode. `kafka` is the message
    Kafka's reader throws for it (DumpLogSegments prints it); `unknown_type` the record type
    when it is one Kafka does not know."""

    def __init__(self, reason: str, kafka: str = "", unknown_type: int | None = None):
        super().__init__(reason)
        self.reason, self.kafka, self.unknown_type = reason, kafka, unknown_type

    def __reduce__(self):
        return (type(self), (self.reason, self.kafka, self.unknown_type))


@dataclass(frozen=True)
class InternalRecord:
    """A decoded key or value: for a key, `version` is its record type (the leading int16)."""

    record_type: str          # e.g. "offset_commit", "group_metadata", "transaction_log"
    version: int
    fields: StructValue       # Kafka's JSON field names, in Kafka's order
    text: str

    def json(self) -> str:
        """The JSON DumpLogSegments prints for it (after "key: " or "payload: ")."""
        return self.text


def coordinator(topic: str) -> dict[int, RecordKind]:
    table = COORDINATORS.get(topic)
    if table is None:
        raise BadOptionError("topic", topic, "internal records are those of "
                             + " and ".join(sorted(COORDINATORS)))
    return table


def _int16(data: bytes, what: str, topic: str) -> int:
    if len(data) < 2:
        raise InternalRecordError(f"{topic} {what} of {len(data)} byte(s) is too short for its "
                                  f"leading int16", f"Could not read version from {what}'s "
                                  "buffer.")
    return int.from_bytes(data[:2], "big", signed=True)


def decode_key(topic: str, key, *, strict: bool = True) -> InternalRecord:
    """The key of a record of `topic`. `strict=False` reads as Kafka does, ignoring bytes after
    the key's fields."""
    table = coordinator(topic)
    if key is None:
        raise InternalRecordError(f"a {topic} record without a key")
    data = bytes(key)
    type_id = _int16(data, "key", topic)
    kind = table.get(type_id)
    if kind is None:
        raise InternalRecordError(f"{topic} key of unknown record type {type_id} (known: "
                                  f"{', '.join(map(str, sorted(table)))})",
                                  f"Found an unknown record type {type_id}", type_id)
    try:
        # Kafka reads a key at its type as version; key classes read the same at every version
        fields = read_message(kind.key, data, 2, 0, False, strict)
    except ReadFailure as failure:
        raise _failure(failure, topic, "key", type_id, kind.key.name, type_id) from None
    text = f'{{"type":"{type_id}","data":{struct_json(kind.key, fields, 0)}}}'
    return InternalRecord(kind.name, type_id, fields, text)


def decode_value(topic: str, key_record: InternalRecord, value, *,
                 strict: bool = True) -> InternalRecord | None:
    """The value of the record whose key is `key_record`; None for a tombstone."""
    if value is None:
        return None
    kind = coordinator(topic).get(key_record.version)
    if kind is None or kind.name != key_record.record_type:
        raise BadOptionError("key_record", key_record.record_type, f"not a key of {topic}")
    data = bytes(value)
    version = _int16(data, "value", topic)
    msg = kind.value
    if version not in msg.valid:
        raise InternalRecordError(f"{topic} value of record type {kind.type_id} ({msg.name}): "
                                  f"unknown version {version} (known: {msg.valid.lo}-"
                                  f"{msg.valid.hi})", f"Found an unknown record version "
                                  f"{version} for {kind.type_id} type")
    try:
        fields = read_message(msg.struct, data, 2, version, version in msg.flexible, strict)
    except ReadFailure as failure:
        raise _failure(failure, topic, "value", kind.type_id, f"{msg.name} v{version}",
                       version) from None
    text = f'{{"version":"{version}","data":{_value_json(kind, fields, version)}}}'
    return InternalRecord(kind.name, version, fields, text)


def _failure(failure: ReadFailure, topic: str, what: str, type_id: int, name: str,
             version: int) -> InternalRecordError:
    return InternalRecordError(
        f"{topic} {what} of record type {type_id} ({name}): {failure.where()}: "
        f"{failure.reason}", f"Could not read record with version {version} from {what}'s "
        f"buffer due to: {failure.kafka}.")


def _value_json(kind: RecordKind, fields: StructValue, version: int) -> str:
    st = kind.value.struct
    if kind.name == "transaction_log":
        status = fields["transactionStatus"]
        name = TRANSACTION_STATES.get(status, str(status))
        return struct_json(st, fields, version, {"transactionStatus": jackson_string(name)})
    if kind.name != "group_metadata" or fields["protocolType"] != CONSUMER_PROTOCOL:
        return struct_json(st, fields, version)
    member_struct = st.fields[-1].type.element
    members = []
    for member in fields["members"]:
        overrides = {}
        for name, msg in (("subscription", SUBSCRIPTION), ("assignment", ASSIGNMENT)):
            parsed = consumer_protocol(msg, member[name])
            if parsed is not None:
                overrides[name] = struct_json(msg.struct, parsed[1], parsed[0])
        members.append(struct_json(member_struct, member, version, overrides))
    return struct_json(st, fields, version, {"members": "[" + ",".join(members) + "]"})


def consumer_protocol(msg: Message, data: bytes) -> tuple[int, StructValue] | None:
    """(version, fields) of a classic consumer's subscription or assignment, None when Kafka
    would fail to read it. Any version is read with the newest layout (a negative one as 0),
    but a topic-partition struct refuses a version newer than the message's newest."""
    if len(data) < 2:
        return None
    version = max(int.from_bytes(data[:2], "big", signed=True), 0)
    try:
        return version, read_message(msg.struct, data, 2, version, False, False,
                                     msg.valid.hi)
    except ReadFailure:
        return None


def dump_texts(topic: str, key, value, offset: int) -> tuple[str | None, str | None]:
    """What DumpLogSegments prints after "key: " and "payload: " for a record of `topic` (None:
    nothing). A record without a key ends Kafka's dump: InternalRecordError."""
    if key is None:
        raise InternalRecordError(f"Failed to decode message at offset {offset} using the "
                                  "specified decoder (message had a missing key)")
    try:
        key_record = decode_key(topic, key, strict=False)
        value_record = decode_value(topic, key_record, value, strict=False)
    except InternalRecordError as err:
        if err.unknown_type is not None:
            return f"Unknown record type {err.unknown_type} at offset {offset}, skipping.", None
        return f"Error at offset {offset}, skipping. {err.kafka}", None
    return key_record.json(), "<DELETE>" if value_record is None else value_record.json()
