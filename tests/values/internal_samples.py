"""Records of Kafka's coordinator topics (`__consumer_offsets`, `__transaction_state`,
`__share_group_state`) made for the tests: an encoder that writes a message definition's fields
in Kafka's layout (the inverse of message_protocol.py's reader, written independently of it),
values drawn from each definition (every record type, every value version), and malformed
variants of them.

Strings mix ASCII with characters Jackson escapes (quotes, backslashes, control characters) and
characters beyond the BMP; some bytes are not UTF-8. A "consumer" group's member carries real
consumer-protocol bytes of every version (and some that do not parse).
"""

from __future__ import annotations

import random
import struct

from segmentlog_source.values.kafka_internal.messages import (ASSIGNMENT, COORDINATORS,
                                                              SUBSCRIPTION)
from segmentlog_source.format.message_protocol import (
    BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, STRING, UINT16, UUID, Array, Struct,
    StructValue, default_of)

FIXED = {INT8: ">b", INT16: ">h", INT32: ">i", INT64: ">q", UINT16: ">H", FLOAT64: ">d",
         BOOL: ">?"}
RANGES = {INT8: (-128, 127), INT16: (-32768, 32767), INT32: (-2**31, 2**31 - 1),
          INT64: (-2**63, 2**63 - 1), UINT16: (0, 65535)}
TEXTS = ["", "g", "orders", 'quote " and \\ back', "tab\there\nnew\rline\x00\x01\x1f\x7f",
         "caf\u00e9 \u2028 \U0001f600", "/10.0.0.1", "consumer-g-1-0b4c"]


def uvarint(value: int) -> bytes:
    out = bytearray()
    value &= 0xFFFFFFFF
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_struct(st: Struct, value: StructValue, version: int, flexible: bool) -> bytes:
    out = bytearray()
    tagged = []
    for f in st.fields:
        if version not in f.versions:
            continue
        if version in f.tagged:
            if value[f.name] != default_of(f):
                tagged.append(f)
            continue
        out += _encode(f.type, value[f.name], version, flexible, version in f.nullable)
    if flexible:
        out += uvarint(len(tagged))
        for f in sorted(tagged, key=lambda f: f.tag):
            if isinstance(f.type, Struct):
                v = value[f.name]
                body = uvarint(0) if v is None else uvarint(1) + encode_struct(
                    f.type, v, version, True)
            else:
                body = _encode(f.type, value[f.name], version, True, True)
            out += uvarint(f.tag) + uvarint(len(body)) + body
    return bytes(out)


def _encode(type_, v, version: int, flexible: bool, nullable: bool) -> bytes:
    if type_ in FIXED:
        return struct.pack(FIXED[type_], v)
    if type_ == UUID:
        return _uuid_bytes(v)
    if isinstance(type_, Struct):
        body = b"" if v is None else encode_struct(type_, v, version, flexible)
        return (struct.pack(">b", -1 if v is None else 1) + body) if nullable else body
    if v is None:
        return uvarint(0) if flexible else struct.pack(">h" if type_ == STRING else ">i", -1)
    if type_ == STRING:
        data = v.encode("utf-8")
    elif type_ == BYTES:
        data = v
    else:
        data = b"".join(_encode(type_.element, x, version, flexible, False) for x in v)
    count = len(v) if isinstance(type_, Array) else len(data)
    if flexible:
        return uvarint(count + 1) + data
    return struct.pack(">h" if type_ == STRING else ">i", count) + data


def _uuid_bytes(text: str) -> bytes:
    import base64
    return base64.urlsafe_b64decode(text + "==")


def draw(st: Struct, version: int, rng: random.Random) -> StructValue:
    """Values for every field of `st` at `version` (defaults where the version lacks one)."""
    out = StructValue()
    for f in st.fields:
        if version not in f.versions:
            out[f.name] = default_of(f)
        elif version in f.tagged and rng.random() < 0.3:
            out[f.name] = default_of(f)
        elif version in f.nullable and rng.random() < 0.25:
            out[f.name] = None
        else:
            out[f.name] = _draw(f.type, version, rng)
    return out


def _draw(type_, version: int, rng: random.Random):
    if type_ in RANGES:
        lo, hi = RANGES[type_]
        return rng.choice([lo, hi, max(lo, -1), 0, 1, rng.randint(lo, hi)])
    if type_ == BOOL:
        return rng.random() < 0.5
    if type_ == FLOAT64:
        return rng.choice([0.0, 1.5, -2.25e-5, 1e7, 123456.789])
    if type_ == UUID:
        import base64
        raw = bytes(rng.getrandbits(8) for _ in range(16))
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    if type_ == STRING:
        return rng.choice(TEXTS)
    if type_ == BYTES:
        return bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 5, 17])))
    if isinstance(type_, Struct):
        return draw(type_, version, rng)
    return [_draw(type_.element, version, rng) for _ in range(rng.choice([0, 1, 2, 3]))]


def consumer_protocol_bytes(rng: random.Random, assignment: bool) -> bytes:
    """A classic consumer's subscription or assignment at a version from -1 to 5 (Kafka reads
    any), or now and then bytes that do not parse."""
    if rng.random() < 0.15:
        return rng.choice([b"", b"\x00", b"\x00\x01\x00\x00\x00\x05ab", b"\x00\x00\xff\xff\xff"])
    msg = ASSIGNMENT if assignment else SUBSCRIPTION
    version = rng.choice([-1, 0, 1, 2, 3, 3, 5])
    value = draw(msg.struct, max(version, 0), rng)
    return struct.pack(">h", version) + encode_struct(msg.struct, value, max(version, 0), False)


def value_bytes(topic: str, type_id: int, version: int, rng: random.Random) -> bytes:
    msg = COORDINATORS[topic][type_id].value
    value = draw(msg.struct, version, rng)
    if msg.name == "GroupMetadataValue":
        value["protocolType"] = rng.choice(["consumer", "consumer", "connect", ""])
        for member in value["members"]:
            member["subscription"] = consumer_protocol_bytes(rng, False)
            member["assignment"] = consumer_protocol_bytes(rng, True)
    if msg.name == "TransactionLogValue":   # every state, and ids Kafka does not know
        value["transactionStatus"] = [0, 1, 2, 3, 4, 5, 6, 7, 8, -1][rng.randrange(10)]
    return struct.pack(">h", version) + encode_struct(msg.struct, value, version,
                                                      version in msg.flexible)


def key_bytes(topic: str, type_id: int, rng: random.Random) -> bytes:
    kind = COORDINATORS[topic][type_id]
    return struct.pack(">h", type_id) + encode_struct(kind.key, draw(kind.key, 0, rng), 0, False)


def samples(topic: str, per_version: int, seed: int = 7) -> list[tuple[bytes, bytes | None]]:
    """(key, value) pairs: every record type of `topic` at every value version, and a
    tombstone of each type."""
    rng = random.Random(seed)
    out = []
    for type_id, kind in sorted(COORDINATORS[topic].items()):
        for version in range(kind.value.valid.lo, kind.value.valid.hi + 1):
            out += [(key_bytes(topic, type_id, rng), value_bytes(topic, type_id, version, rng))
                    for _ in range(per_version)]
        out.append((key_bytes(topic, type_id, rng), None))
    return out


def malformed(topic: str, pairs: list[tuple[bytes, bytes | None]]
              ) -> list[tuple[bytes, bytes | None]]:
    """Records Kafka reads with an error or refuses: every truncation of the given keys and
    values, unknown record types and versions, a key or value too short for its int16,
    trailing bytes (which Kafka ignores), and bytes that break each length rule."""
    out = []
    for key, value in pairs:
        out += [(key[:cut], value) for cut in range(len(key))]
        if value is not None:
            out += [(key, value[:cut]) for cut in range(len(value))]
            out.append((key, value + b"\x00\x07"))
            out.append((key, value[:2] + b"\xff" * 7 + value[9:]))
        out.append((key + b"\x01", value))
    key, value = pairs[0]
    known = COORDINATORS[topic]
    for type_id in (-1, 9, 18, 24, 0x7FFF):
        if type_id not in known:
            out.append((struct.pack(">h", type_id) + key[2:], value))
    for version in (-1, 5, 0x7FFF):
        out.append((key, struct.pack(">h", version) + (value or b"")[2:]))
    out += [(b"", value), (b"\x00", value), (key, b""), (key, b"\x00")]
    return out + targeted(topic)


def targeted(topic: str) -> list[tuple[bytes, bytes]]:
    """Values that break the rules a random cut seldom reaches: the tagged field section
    (negative count, more than 10000 fields, an unknown tag of negative size, unknown tags
    Kafka skips) and a compact string longer than 32767 bytes."""
    rng = random.Random(5)
    type_id = 1 if topic == "__consumer_offsets" else 0
    msg = COORDINATORS[topic][type_id].value
    version = msg.valid.hi                     # flexible: its bytes end with the tag count
    value = draw(msg.struct, version, rng)
    for f in msg.struct.fields:
        if version in f.tagged:
            value[f.name] = default_of(f)
    body = struct.pack(">h", version) + encode_struct(msg.struct, value, version, True)
    assert body.endswith(b"\x00")
    key = key_bytes(topic, type_id, rng)
    tails = [b"\xff\xff\xff\xff\x0f", uvarint(10_001) + bytes(10_001),
             b"\x01" + uvarint(9) + b"\xff\xff\xff\xff\x0f", b"\x01\x09\x32ab",
             b"\x02\x09\x01x\x0a\x00", b"\x01\x00\x03abc"]
    out = [(key, body[:-1] + tail) for tail in tails]
    if topic == "__consumer_offsets":
        out.append((key_bytes(topic, 5, rng), b"\x00\x00" + uvarint(32_769) + b"x" * 8))
    return out
