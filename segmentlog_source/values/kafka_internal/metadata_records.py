"""Records of the KRaft cluster metadata log decoded (metadata_messages.py declares them), their
secrets redacted, and printed as Kafka 4.4's DumpLogSegments prints them with
--cluster-metadata-decoder.

    decode_metadata(value)  -> MetadataRecord(api_key, record_type, version, fields)
    redact(record)          -> the record with its secrets replaced by "(redacted)"
    dump_payload(value, o)  -> the text DumpLogSegments prints after "payload: " (redacted)

Secrets are ConfigRecord values whose name Kafka's config schema marks sensitive or does not know
(metadata_configs.py), and a UserScramCredentialRecord's salt, storedKey and serverKey. A
DelegationTokenRecord holds no secret (its HMAC is computed from the token id and the brokers'
delegation.token.secret.key, and is never written to the log). A ConfigRecord deleting a config
(a null value) stays null.

Kafka reads a record of a version newer than it knows with its newest layout, and so does
`strict=False` (the dump); `strict=True` (columns, the replay) refuses it. Either way a record
whose bytes do not end where its fields end is refused, as Kafka refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field, replace

from ...errors import MalformedValueError
from ...format.message_protocol import ReadFailure, Reader, StructValue, read_struct
from .kafka_json import jackson_string, struct_json
from .metadata_configs import config_is_sensitive
from .metadata_messages import METADATA_RECORD_TYPES, MetadataRecordType

FRAME_VERSION = 1
REDACTED = "(redacted)"
CONFIG_RECORD, USER_SCRAM_CREDENTIAL_RECORD = 4, 11
_SCRAM_SECRETS = ("salt", "storedKey", "serverKey")
_SHORT_MAX = 0x7FFF


class MetadataRecordError(MalformedValueError):
    """A metadata record value that does not decode: `reason` for people (field and byte),
    `kafka` the exception message DumpLogSegments prints after "Error at <offset>, skipping. "."""

    def __init__(self, reason: str, kafka: str = ""):
        super().__init__(reason)
        self.reason, self.kafka = reason, kafka

    def __reduce__(self):
        return (type(self), (self.reason, self.kafka))


@dataclass(frozen=True)
class MetadataRecord:
    """A decoded metadata record. `fields` are Kafka's JSON field names in Kafka's order (a
    field the version lacks holds its default); `redacted` names the fields redact() replaced."""

    api_key: int
    record_type: str             # Kafka's constant: TOPIC_RECORD, CONFIG_RECORD, ...
    version: int
    fields: StructValue
    redacted: tuple[str, ...] = dc_field(default=())

    @property
    def kind(self) -> MetadataRecordType:
        return METADATA_RECORD_TYPES[self.api_key]

    def data_json(self) -> str:
        """The record's fields as Kafka's JSON converter prints them (redacted ones as text)."""
        overrides = {name: jackson_string(REDACTED) for name in self.redacted}
        return struct_json(self.kind.message.struct, self.fields, _layout(self.version),
                           overrides)

    def json(self) -> str:
        """What DumpLogSegments prints after "payload: "."""
        return (f'{{"type":"{self.record_type}","version":{self.version},'
                f'"data":{self.data_json()}}}')


def decode_metadata(value, *, strict: bool = True) -> MetadataRecord:
    """A metadata record's value (bytes) decoded, secrets NOT yet redacted (see redact)."""
    if value is None:
        raise MetadataRecordError("a cluster metadata record without a value",
                                  "Error while reading frame version")
    data = bytes(value)
    r = Reader(data)
    frame = _short(r, "frame version")
    if frame == 0:
        raise MetadataRecordError(
            "frame version 0 (KRaft's 2.8 preview), which Kafka no longer reads",
            "Could not deserialize metadata record with frame version 0. Note that upgrades "
            "from the preview release of KRaft in 2.8 to newer versions are not supported.")
    if frame != FRAME_VERSION:
        raise MetadataRecordError(
            f"unknown frame version {frame} (only {FRAME_VERSION} exists)",
            f"Could not deserialize metadata record due to unknown frame version {frame}"
            f"(only frame version {FRAME_VERSION} is supported)")
    api_key = _short(r, "type")
    version = _short(r, "version")
    kind = METADATA_RECORD_TYPES.get(api_key)
    if kind is None:
        raise MetadataRecordError(
            f"unknown record type {api_key} (known: "
            f"{', '.join(map(str, sorted(METADATA_RECORD_TYPES)))})",
            f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id "
            f"{api_key}")
    msg = kind.message
    if strict and version not in msg.valid:
        raise MetadataRecordError(
            f"{msg.name} of unknown version {version} (known: {msg.valid.lo}-"
            f"{msg.valid.hi})", f"Unknown version {version} of {msg.name}")
    r.highest = msg.valid.hi     # a nested struct refuses versions newer than the record's
    layout = _layout(version)
    try:
        fields = read_struct(r, msg.struct, layout, layout in msg.flexible, nested=False)
    except ReadFailure as failure:
        raise MetadataRecordError(
            f"{msg.name} v{version}: {failure.where()}: {failure.reason}",
            f"Failed to deserialize record with type {api_key}") from None
    if r.remaining():
        raise MetadataRecordError(
            f"{msg.name} v{version}: {r.remaining()} byte(s) follow the record, from byte "
            f"{r.pos}", f"Found {r.remaining()} byte(s) of garbage after {api_key}")
    return MetadataRecord(api_key, kind.name, version, fields)


def _layout(version: int) -> int:
    """The version whose layout Kafka's generated code reads (and prints) a record at. It tests
    a field's versions only where they do not span all the record's valid versions, so a
    negative version (a 5-byte varint) reads as version 0 does; a newer one reads as itself."""
    return max(version, 0)


def _short(r: Reader, entity: str) -> int:
    """A frame's uvarint as Kafka's serde reads it: at most Short.MAX_VALUE, cast to a short."""
    try:
        value = r.uvarint("")
    except ReadFailure as failure:
        raise MetadataRecordError(f"the {entity}: {failure.reason}",
                                  f"Error while reading {entity}") from None
    if value > _SHORT_MAX:
        raise MetadataRecordError(f"the {entity} {value} is over {_SHORT_MAX}",
                                  f"Value for {entity} was too large.")
    return ((value + 0x8000) & 0xFFFF) - 0x8000   # a negative int (5-byte varint) as Java casts


def sensitive_fields(record: MetadataRecord) -> tuple[str, ...]:
    """The fields of `record` whose values are secrets."""
    f = record.fields
    if record.api_key == CONFIG_RECORD:
        if f["value"] is not None and config_is_sensitive(f["resourceType"], f["name"]):
            return ("value",)
    elif record.api_key == USER_SCRAM_CREDENTIAL_RECORD:
        return _SCRAM_SECRETS
    return ()


def redact(record: MetadataRecord) -> MetadataRecord:
    """`record` with each secret replaced by "(redacted)" (bytes fields too: the value is then
    that text, not bytes). Apply it before anything is shown or returned to a user."""
    names = sensitive_fields(record)
    if not names:
        return record
    fields = StructValue(record.fields)
    fields.unknown_tags = record.fields.unknown_tags
    for name in names:
        fields[name] = REDACTED
    return replace(record, fields=fields, redacted=tuple(names))


def hides_raw(value) -> bool:
    """Whether a metadata record's raw value (bytes) must not be shown: unless it decodes, as
    Kafka reads it, to a record without a secret. A value that does not decode (bytes after a
    ConfigRecord, a cut tagged field, a version or record type this reader does not know) may
    still carry a password in bytes no decoder reaches, so it is hidden too (the safe side);
    an empty one has nothing to hide."""
    if not value:
        return False
    try:
        return bool(sensitive_fields(decode_metadata(value, strict=False)))
    except MetadataRecordError:
        return True


def dump_payload(value, offset: int) -> str:
    """The text DumpLogSegments 4.4 prints after "payload: " for a metadata record, its secrets
    redacted; a record it cannot read is Kafka's "Error at <offset>, skipping. ..." line."""
    try:
        return redact(decode_metadata(value, strict=False)).json()
    except MetadataRecordError as err:
        return f"Error at {offset}, skipping. {err.kafka}"

