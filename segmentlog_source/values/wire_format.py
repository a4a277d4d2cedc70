"""Schema Registry's wire format: how a serializer frames each key or value.

    0  magic byte, always 0
    1  schema id, int32 big-endian (the registry's global id)
    5  Protobuf only: the message indexes, zigzag varints (a count, then the path of the
       message type in its .proto file; the count 0 alone means [0], the first message)
    5+ the body: Avro binary, JSON text, or Protobuf

A payload shorter than the header or with another first byte was not written by a Schema
Registry serializer; its row is malformed. (Schema Registry 8.0 added an opt-in framing with
magic byte 1 and a 16-byte schema GUID, or the id in a record header: not read here.)
"""

from __future__ import annotations

from typing import Sequence

MAGIC = 0
GUID_MAGIC = 1      # Schema Registry 8.0+, opt-in: a 16-byte schema GUID instead of the id
HEADER_BYTES = 5


def split_framed(payloads: Sequence[bytes | None]
                 ) -> tuple[list[int | None], list[int], list[str | None]]:
    """(schema ids, body starts, error reasons) per payload; a malformed one has start -1 and a
    reason, a null one start 0 and neither."""
    ids: list[int | None] = []
    starts: list[int] = []
    errors: list[str | None] = []
    for payload in payloads:
        if payload is None:
            ids.append(None), starts.append(0), errors.append(None)
        elif len(payload) < HEADER_BYTES:
            ids.append(None), starts.append(-1)
            errors.append(f"truncated: {len(payload)} bytes, shorter than the 5-byte Schema "
                          f"Registry header")
        elif payload[0] == GUID_MAGIC:
            ids.append(None), starts.append(-1)
            errors.append("magic byte 0x01: Schema Registry 8's schema-GUID framing, which "
                          "segmentlog does not read (it reads the schema-id framing, 0x00)")
        elif payload[0] != MAGIC:
            ids.append(None), starts.append(-1)
            errors.append(f"bad magic byte 0x{payload[0]:02x}: a Schema Registry payload "
                          f"starts with 0x00")
        else:
            ids.append(int.from_bytes(payload[1:HEADER_BYTES], "big", signed=True))
            starts.append(HEADER_BYTES)
            errors.append(None)
    return ids, starts, errors
