"""Kafka's message protocol read as its generated classes read it, from message definitions
written as Python data (values/kafka_internal's messages.py and group_messages.py, and
remote_log_metadata.py here); values/kafka_internal/kafka_json.py prints what it reads. Bytes
only: storage/ decodes internal topics' values with it, values/ turns them into columns.

Each field has the versions it exists in; a struct is read at one version, classic or flexible:

    type       classic versions                      flexible versions
    int8..64   big-endian, fixed size (uint16: unsigned; float64: IEEE 754; bool: int8 != 0)
    uuid       16 bytes (printed as Kafka's Uuid.toString: URL-safe base64, no padding)
    string     int16 length, -1 = null; UTF-8         uvarint length + 1, 0 = null
    bytes      int32 length, -1 = null                uvarint length + 1, 0 = null
    []T        int32 count, -1 = null; the elements   uvarint count + 1, 0 = null
    struct     its fields in order                    + tagged fields: uvarint count, then
                                                        per field uvarint tag, uvarint size, value
    T? struct  int8 marker, < 0 = null                (tagged) uvarint marker, 0 = null

Kafka reads a message without checking that its bytes end where it ends; `strict` reads do.
A failure carries two texts: a reason naming the field and byte position, and the message Kafka's
generated code would throw (`kafka`), which DumpLogSegments prints.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field as dc_field
from typing import NamedTuple

from .java_text import java_utf8

MAX_VERSION = 0x7FFF
INT8, INT16, INT32, INT64 = "int8", "int16", "int32", "int64"
UINT16, FLOAT64, BOOL, UUID, STRING, BYTES = "uint16", "float64", "bool", "uuid", "string", "bytes"
_FIXED = {INT8: struct.Struct(">b"), INT16: struct.Struct(">h"), INT32: struct.Struct(">i"),
          INT64: struct.Struct(">q"), UINT16: struct.Struct(">H"), FLOAT64: struct.Struct(">d"),
          BOOL: struct.Struct(">b"), UUID: struct.Struct(">16s")}
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
MAX_STRING = 0x7FFF
MAX_COLLECTION = 1_000_000     # Kafka's generated readers refuse larger arrays
MAX_TAGGED_FIELDS = 10_000


class Versions(NamedTuple):
    lo: int
    hi: int

    def __contains__(self, version) -> bool:
        return self.lo <= version <= self.hi


NONE = Versions(1, 0)


def versions(text: str) -> Versions:
    """Kafka's version range syntax: "none", "3", "3+", "0-4"."""
    if text == "none":
        return NONE
    if text.endswith("+"):
        return Versions(int(text[:-1]), MAX_VERSION)
    lo, _, hi = text.partition("-")
    return Versions(int(lo), int(hi or lo))


EMPTY = object()   # a field's default is its type's empty value (Kafka: no default given)


@dataclass(frozen=True)
class Array:
    element: object


@dataclass(frozen=True)
class Field:
    name: str                 # as Kafka's JSON converters name it (camelCase)
    type: object              # a primitive name, Array or Struct
    versions: Versions
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: object = EMPTY


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]
    tags: dict = dc_field(default_factory=dict, compare=False)   # tag -> Field

    def __post_init__(self):
        self.tags.update({f.tag: f for f in self.fields if f.tag is not None})


def field(name: str, type_, versions_: str | None = None, *, nullable: str = "none",
          tagged: str | None = None, tag: int | None = None, default=EMPTY) -> Field:
    """A Field from Kafka's spellings. A tagged field given no versions exists where it is
    tagged; any other field given none exists in every version."""
    tagged_versions = NONE if tagged is None else versions(tagged)
    if versions_ is None:
        present = tagged_versions if tagged is not None else versions("0+")
    else:
        present = versions(versions_)
    return Field(name, type_, present, versions(nullable), tagged_versions, tag, default)


class StructValue(dict):
    """A struct's field values by name, and the tagged fields its version does not know
    (Kafka keeps them, and counts them when it compares a struct with its default)."""

    unknown_tags: tuple = ()

    def __eq__(self, other):
        if not isinstance(other, dict):
            return NotImplemented
        return dict.__eq__(self, other) and self.unknown_tags == getattr(other, "unknown_tags", ())

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None


class ReadFailure(Exception):
    """Where reading stopped: `reason` for people, `kafka` as Kafka's generated code says it."""

    def __init__(self, reason: str, kafka: str, position: int):
        super().__init__(reason)
        self.reason, self.kafka, self.position = reason, kafka, position
        self.path: list[str] = []

    def where(self) -> str:
        return "".join(self.path).lstrip(".") or "the message"


def empty_value(type_):
    if isinstance(type_, Array):
        return []
    if isinstance(type_, Struct):
        return StructValue((f.name, default_of(f)) for f in type_.fields)
    return {STRING: "", BYTES: b"", UUID: ZERO_UUID, BOOL: False, FLOAT64: 0.0}.get(type_, 0)


def default_of(f: Field):
    return empty_value(f.type) if f.default is EMPTY else f.default


class Reader:
    """The bytes of one message and a position in them, read as Kafka's ByteBufferAccessor."""

    __slots__ = ("data", "pos", "highest")

    def __init__(self, data: bytes, pos: int = 0, highest: int = MAX_VERSION):
        self.data, self.pos = data, pos
        self.highest = highest   # the message's newest version: nested structs refuse newer

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def fixed(self, type_: str, what: str):
        st = _FIXED[type_]
        if self.pos + st.size > len(self.data):
            # a BufferUnderflowException, whose message is null
            raise ReadFailure(f"{_named(what)}{type_} needs {st.size} bytes at byte "
                              f"{self.pos}, {self.remaining()} left", "null", self.pos)
        (value,) = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return value

    def uvarint(self, what: str) -> int:
        """Kafka's readUnsignedVarint: at most 5 bytes, returned as a Java int."""
        start, value = self.pos, 0
        for i in range(5):
            if self.pos >= len(self.data):
                raise ReadFailure(f"{_named(what)}the varint at byte {start} is cut off by "
                                  "the end", "null", start)
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F if i < 4 else byte) << (7 * i)
            if byte < 0x80:
                return _int32(value)
        value = _int32(value)
        raise ReadFailure(f"{_named(what)}the varint at byte {start} is longer than 5 bytes",
                          "Varint is too long, the most significant bit in the 5th byte is "
                          f"set, converted value: {value & 0xFFFFFFFF:x}", start)

    def take(self, size: int, what: str) -> bytes:
        """readArray: `size` bytes (Kafka reports a negative size as Java does)."""
        if size > self.remaining():
            raise ReadFailure(f"{_named(what)}{size} bytes at byte {self.pos}, "
                              f"{self.remaining()} left", f"Error reading byte array of {size} "
                              f"byte(s): only "
                              f"{self.remaining()} byte(s) available", self.pos)
        if size < 0:
            raise ReadFailure(f"{_named(what)}a negative size {size} at byte {self.pos}",
                              str(size), self.pos)
        out = bytes(self.data[self.pos:self.pos + size])
        self.pos += size
        return out


def _named(what: str) -> str:
    """A reason's prefix for what is being read: fields are named by the failure's path."""
    return f"{what}: " if what else ""


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def read_struct(r: Reader, st: Struct, version: int, flexible: bool,
                nested: bool = True) -> StructValue:
    if nested and version > r.highest:
        raise ReadFailure(f"{st.name} has no version {version}",
                          f"Can't read version {version} of {st.name}", r.pos)
    out = StructValue()
    for f in st.fields:
        if version not in f.versions or version in f.tagged:
            out[f.name] = default_of(f)
            continue
        try:
            out[f.name] = _read(r, f, f.type, f.name, version, flexible, version in f.nullable)
        except ReadFailure as failure:
            failure.path.insert(0, "." + f.name)
            raise
    if flexible:
        _read_tagged(r, st, out, version)
    return out


def _read(r: Reader, f: Field, type_, name: str, version: int, flexible: bool, nullable: bool):
    if isinstance(type_, str) and type_ in _FIXED:
        value = r.fixed(type_, "")
        if type_ == UUID:
            return base64.urlsafe_b64encode(value).rstrip(b"=").decode("ascii")
        return value != 0 if type_ == BOOL else value
    if isinstance(type_, Struct):
        if nullable and r.fixed(INT8, "the null marker") < 0:
            return None
        return read_struct(r, type_, version, flexible)
    if flexible:
        size = _int32(r.uvarint("the length") - 1)
    else:
        size = r.fixed(INT16 if type_ == STRING else INT32, "the length")
    if size < 0:
        if nullable:
            return None
        raise ReadFailure("null, which it may not be", f"non-nullable field {name} "
                          "was serialized as null", r.pos)
    if type_ == STRING:
        if size > MAX_STRING:
            raise ReadFailure(f"a string of {size} bytes, over Kafka's 32767",
                              f"string field {name} had invalid length {size}", r.pos)
        return java_utf8(r.take(size, ""))
    if type_ == BYTES:
        return r.take(size, "")
    return _read_array(r, f, type_.element, name, size, version, flexible)


def _read_array(r: Reader, f: Field, element, name: str, size: int, version: int,
                flexible: bool) -> list:
    if size > r.remaining():
        raise ReadFailure(f"{size} elements announced at byte {r.pos}, "
                          f"{r.remaining()} bytes left", "Tried to allocate a collection of "
                          f"size {size}, but there are only {r.remaining()} bytes remaining.",
                          r.pos)
    if size > MAX_COLLECTION:
        raise ReadFailure(f"{size} elements, over Kafka's {MAX_COLLECTION}",
                          f"Tried to read a collection of size {size}, which exceeds the "
                          f"maximum allowed size of {MAX_COLLECTION}.", r.pos)
    items = []
    # Kafka names a primitive element "<field> element"; a struct element is read by its class
    inner = name if isinstance(element, Struct) else f"{name} element"
    for i in range(size):
        try:
            items.append(_read(r, f, element, inner, version, flexible, False))
        except ReadFailure as failure:
            failure.path.insert(0, f"[{i}]")
            raise
    return items


def _read_tagged(r: Reader, st: Struct, out: StructValue, version: int) -> None:
    count = r.uvarint("the tagged field count")
    if count < 0:
        raise ReadFailure(f"a negative tagged field count {count}",
                          f"Invalid negative number of tagged fields {count}", r.pos)
    if count > r.remaining():
        raise ReadFailure(f"{count} tagged fields announced, {r.remaining()} bytes left",
                          f"Tried to read {count} tagged fields, but there are only "
                          f"{r.remaining()} bytes remaining.", r.pos)
    if count > MAX_TAGGED_FIELDS:
        raise ReadFailure(f"{count} tagged fields, over Kafka's {MAX_TAGGED_FIELDS}",
                          f"Tried to read {count} tagged fields, which exceeds the maximum "
                          f"allowed count of {MAX_TAGGED_FIELDS}.", r.pos)
    unknown = []
    for _ in range(count):
        tag = r.uvarint("a tag")
        size = r.uvarint(f"the size of tag {tag}")
        f = st.tags.get(tag)
        if f is None:
            unknown.append((tag, r.take(size, f"tag {tag}")))
            continue
        if version not in f.tagged:
            # a tag the struct declares, at a version before its field's: Kafka refuses it
            raise ReadFailure(f"tag {tag} ({f.name}) at byte {r.pos}, a field of versions "
                              f"{f.tagged.lo}+ only", f"Tag {tag} is not valid for version "
                              f"{version}", r.pos)
        # A known tag is read by its type; Kafka does not hold it to its announced size.
        try:
            if isinstance(f.type, Struct):
                marker = r.uvarint("the null marker")
                out[f.name] = None if marker <= 0 else read_struct(r, f.type, version, True)
            else:
                out[f.name] = _read(r, f, f.type, f.name, version, True, version in f.nullable)
        except ReadFailure as failure:
            failure.path.insert(0, "." + f.name)
            raise
    if unknown:
        out.unknown_tags = tuple(unknown)


@dataclass(frozen=True)
class Message:
    """A top-level message: Kafka's class name, the versions it may be read at, and those of
    them that are flexible."""

    name: str
    valid: Versions
    flexible: Versions
    struct: Struct


def message(name: str, valid: str, flexible: str, *fields: Field) -> Message:
    return Message(name, versions(valid), versions(flexible), Struct(name, fields))


def read_message(st: Struct, data: bytes, pos: int, version: int, flexible: bool,
                 strict: bool, highest: int = MAX_VERSION) -> StructValue:
    """`st` at `version` from data[pos:]; `strict`: nothing may follow it. Kafka reads a
    message of any version, but refuses a struct inside it newer than `highest`."""
    r = Reader(data, pos, highest)
    value = read_struct(r, st, version, flexible, nested=False)
    if strict and r.remaining():
        raise ReadFailure(f"{r.remaining()} bytes follow the message, from byte {r.pos}",
                          "", r.pos)
    return value
