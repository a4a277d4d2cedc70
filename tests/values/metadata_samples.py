"""KRaft cluster metadata records made for the tests: every record type at every version (with
internal_samples.py's encoder, written independently of the reader), records carrying a planted
secret, and hostile values (bad frames, unknown types and versions, cuts, trailing bytes, broken
tagged fields)."""

from __future__ import annotations

import base64
import random

from segmentlog_source.values.kafka_internal.metadata_messages import METADATA_RECORD_TYPES
from segmentlog_source.format.message_protocol import StructValue, default_of
from tests.values.internal_samples import draw, encode_struct, uvarint

# A secret no test output may show, as text and as the base64 Kafka's JSON prints bytes in.
SECRET = "pl4nted-S3cret-k8s"
SECRET_B64 = base64.b64encode(SECRET.encode()).decode()
SECRET_TEXTS = (SECRET, SECRET_B64)

# ConfigRecords whose value must be redacted: (resource type, name); and some that must not
SENSITIVE_CONFIGS = [(4, "ssl.keystore.password"), (4, "sasl.jaas.config"),
                     (4, "listener.name.internal.ssl.key.password"),
                     (4, "some.plugin.setting"), (2, "not.a.topic.config"),
                     (8, "kafka.server.ReplicaManager"), (0, "retention.ms"),
                     (4, "delegation.token.secret.key"), (4, "ssl.truststore.certificates")]
SHOWN_CONFIGS = [(2, "retention.ms"), (2, "cleanup.policy"), (4, "log.retention.ms"),
                 (4, "ssl.keystore.location"), (32, "consumer.session.timeout.ms"),
                 (16, "interval.ms")]


MINUS_ONE = b"\xff\xff\xff\xff\x0f"   # -1 as Kafka's 5-byte unsigned varint


def frame(api_key: int, version: int, body: bytes, frame_version: int = 1) -> bytes:
    return uvarint(frame_version) + uvarint(api_key) + uvarint(version) + body


def encode(api_key: int, version: int, fields: StructValue) -> bytes:
    msg = METADATA_RECORD_TYPES[api_key].message
    return frame(api_key, version, encode_struct(msg.struct, fields, version, True))


def fields_of(api_key: int, **values) -> StructValue:
    st = METADATA_RECORD_TYPES[api_key].message.struct
    out = StructValue((f.name, default_of(f)) for f in st.fields)
    out.update(values)
    return out


def every_type(per_version: int, seed: int = 11) -> list[tuple[int, int, StructValue, bytes]]:
    """(api key, version, fields, value) for each record type and version."""
    rng = random.Random(seed)
    out = []
    for key, kind in sorted(METADATA_RECORD_TYPES.items()):
        msg = kind.message
        for version in range(msg.valid.lo, msg.valid.hi + 1):
            for _ in range(per_version):
                fields = draw(msg.struct, version, rng)
                out.append((key, version, fields, encode(key, version, fields)))
    return out


def secret_records() -> list[bytes]:
    """Records carrying SECRET where it must be redacted, and config records it may show."""
    out = [encode(4, 0, fields_of(4, resourceType=rt, resourceName="", name=name,
                                  value=f"prefix {SECRET} suffix"))
           for rt, name in SENSITIVE_CONFIGS]
    out.append(encode(4, 0, fields_of(4, resourceType=4, resourceName="1",
                                      name="org.apache.kafka.common.security.plain."
                                      "PlainLoginModule", value=SECRET)))
    out.append(encode(11, 0, fields_of(11, name="alice", mechanism=1, salt=SECRET.encode(),
                                       storedKey=SECRET.encode(), serverKey=SECRET.encode(),
                                       iterations=4096)))
    out += [encode(4, 0, fields_of(4, resourceType=rt, resourceName="orders", name=name,
                                   value="shown-value")) for rt, name in SHOWN_CONFIGS]
    out.append(encode(4, 0, fields_of(4, resourceType=4, resourceName="",
                                      name="ssl.keystore.password", value=None)))
    return out


def hostile() -> list[bytes | None]:
    """Values Kafka's reader refuses or reads oddly."""
    topic = encode(2, 0, fields_of(2, name="orders", topicId="AAAAAAAAAAAAAAAAAAAAAQ"))
    change = encode(5, 2, fields_of(5, partitionId=3, topicId="AAAAAAAAAAAAAAAAAAAAAQ",
                                    isr=[1, 2], leader=2, eligibleLeaderReplicas=[3]))
    broker = encode(0, 4, fields_of(0, brokerId=1, endPoints=[StructValue(
        name="PLAINTEXT", host="h", port=9092, securityProtocol=0)]))
    out: list[bytes | None] = [None, b""]
    for value in (topic, change, broker):
        out += [value[:cut] for cut in range(1, len(value))]      # every cut
        out.append(value + b"\x00")                                 # trailing garbage
    out += [
        frame(2, 0, topic[3:], frame_version=0),                   # KRaft 2.8 preview frame
        frame(2, 0, topic[3:], frame_version=2),                   # unknown frame version
        b"\xc0\xc4\x07" + topic[1:],                                # frame version too large
        b"\xff\xff\xff\xff\x7f",                                    # a 5-byte varint frame
        b"\x01\x80",                                                # cut in the api key
        frame(6, 0, b"\x00"), frame(13, 0, b"\x00"), frame(16, 0, b"\x00"),
        frame(30, 0, b"\x00"), frame(0x7FFF, 0, b"\x00"),           # unknown record types
        frame(2, 1, topic[3:]), frame(2, 0x7FFF, topic[3:]),        # versions Kafka lacks
        frame(3, 3, encode(3, 2, fields_of(3, replicas=[1], isr=[1], directories=[]))[3:]),
        frame(0, 5, broker[3:]),                                    # nested struct too new
        frame(2, 40000, topic[3:]),                                 # version over a short
        # a version or type of -1 (a 5-byte varint): Kafka reads a version < 0 as version 0
        b"\x01\x02" + MINUS_ONE + topic[3:], b"\x01" + MINUS_ONE + b"\x00" + topic[3:],
        b"\x01\x05" + MINUS_ONE + change[3:], b"\x01\x00" + MINUS_ONE + broker[3:],
        # tags declared for later versions: ELR (6, 2+) in a version 0 and 1 PartitionChange,
        # cordonedLogDirs (1, 4+) in a version 3 RegisterBroker
        change[:2] + b"\x00" + change[3:], change[:2] + b"\x01" + change[3:],
        broker[:2] + b"\x03" + broker[3:-1] + b"\x01\x01\x01\x00",
        # tagged sections: a changed last byte, a size past the end, an unknown tag (Kafka
        # skips it), a known tag whose value is cut, a negative count
        change[:-1] + b"\x05", topic[:-1] + b"\x01\x09\x20",
        topic[:-1] + b"\x01\x09\x02ab",
        change[:-1] + b"\x01\x00\x03\x03\x00", topic[:-1] + b"\xff\xff\xff\xff\x0f",
    ]
    return out


def undecodable_secrets() -> list[bytes]:
    """Records carrying SECRET that do not decode: bytes after a sensitive ConfigRecord or a
    SCRAM credential, a later version with a field this reader does not know, an unknown
    record type, a tagged section cut short. No dump may show their raw bytes either."""
    jaas = encode(4, 0, fields_of(4, resourceType=4, resourceName="", name="sasl.jaas.config",
                                  value=f"x required password=\"{SECRET}\";"))
    scram = encode(11, 0, fields_of(11, name="alice", mechanism=1, salt=SECRET.encode(),
                                    storedKey=SECRET.encode(), serverKey=SECRET.encode(),
                                    iterations=4096))
    return [jaas + b"\x00", scram + b"\x07", frame(4, 1, jaas[3:] + b"\x02"),
            frame(11, 1, scram[3:] + b"\x02\x00"), frame(30, 0, jaas[3:]),
            jaas[:-1] + b"\x01\x00\x09"]


def mutations(count: int, seed: int = 23) -> list[bytes]:
    """Records of every type with random damage: a byte changed, inserted or deleted, a varint
    byte set to 0xff, a tail cut, or two records spliced."""
    rng = random.Random(seed)
    records = [v for *_, v in every_type(per_version=2, seed=seed)]
    out = []
    while len(out) < count:
        value = bytearray(rng.choice(records))
        at = rng.randrange(len(value))
        action = rng.randrange(6)
        if action == 0:
            value[at] ^= 1 << rng.randrange(8)
        elif action == 1:
            value.insert(at, rng.randrange(256))
        elif action == 2 and len(value) > 1:
            del value[at]
        elif action == 3:
            value[at] = 0xFF
        elif action == 4:
            del value[at:]
        else:
            value = value[:at] + bytearray(rng.choice(records))[rng.randrange(3, 8):]
        out.append(bytes(value))
    return out
