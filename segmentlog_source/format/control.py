"""Control records: the key (and, for transaction markers, the value) of a control batch's record.

A control batch (attributes bit 5) holds one record whose key says what it controls. Big-endian::

    control record key (4 bytes)            end-transaction marker value (6 bytes)
    off size field                          off size field
      0   2  version (int16, 0)               0   2  version (int16, 0)
      2   2  type (int16, see below)          2   4  coordinatorEpoch (int32)

Types (Kafka's ControlRecordType): 0 ABORT, 1 COMMIT (end-transaction markers, batch attributes
0x30), 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS
(KRaft's __cluster_metadata; their values are generated message types, left undecoded here).
Like Kafka, a reader rejects a negative version, reads a higher version as version 0 (fields are
only ever appended) and reports an unknown type as UNKNOWN, which consumers ignore.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ..errors import BadOptionError, CorruptDataError

UNKNOWN = -1
(ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION,
 KRAFT_VOTERS) = range(7)
CONTROL_TYPE_NAMES = {UNKNOWN: "UNKNOWN", ABORT: "ABORT", COMMIT: "COMMIT",
                      LEADER_CHANGE: "LEADER_CHANGE", SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
                      SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER", KRAFT_VERSION: "KRAFT_VERSION",
                      KRAFT_VOTERS: "KRAFT_VOTERS"}
CONTROL_TYPE_IDS = {name: type_id for type_id, name in CONTROL_TYPE_NAMES.items()}

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


class ControlRecord(NamedTuple):
    """A parsed control record. `coordinator_epoch` is set for ABORT/COMMIT markers only."""

    type: int
    version: int
    coordinator_epoch: int | None = None

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES[self.type]

    @property
    def is_transaction_marker(self) -> bool:
        return self.type in (ABORT, COMMIT)


def parse_control_key(key) -> tuple[int, int]:
    """(version, type) of a control record key; an unknown type comes back as UNKNOWN."""
    if key is None or len(key) < _KEY.size:
        size = "null" if key is None else f"{len(key)} bytes"
        raise CorruptDataError(
            f"control record key must have at least {_KEY.size} bytes, found {size}")
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptDataError(f"invalid control record key version {version}")
    return version, (type_id if type_id in CONTROL_TYPE_NAMES else UNKNOWN)


def parse_end_txn_marker(value) -> tuple[int, int]:
    """(version, coordinator_epoch) of an end-transaction marker's value."""
    if value is None or len(value) < _MARKER_VALUE.size:
        size = "null" if value is None else f"{len(value)} bytes"
        raise CorruptDataError(f"end transaction marker value must have at least "
                               f"{_MARKER_VALUE.size} bytes, found {size}")
    version, coordinator_epoch = _MARKER_VALUE.unpack_from(value)
    if version < 0:
        raise CorruptDataError(f"invalid end transaction marker version {version}")
    return version, coordinator_epoch


def parse_control_record(key, value) -> ControlRecord:
    """The control record with this key and value (the value is only read for markers)."""
    version, type_id = parse_control_key(key)
    if type_id in (ABORT, COMMIT):
        return ControlRecord(type_id, version, parse_end_txn_marker(value)[1])
    return ControlRecord(type_id, version)


def end_txn_marker(control_type: int, coordinator_epoch: int) -> tuple[bytes, bytes]:
    """(key, value) of the record of an ABORT or COMMIT end-transaction marker batch."""
    if control_type not in (ABORT, COMMIT):
        raise BadOptionError("control_type", control_type,
                             "an end transaction marker is ABORT or COMMIT")
    if not -2**31 <= coordinator_epoch < 2**31:
        raise BadOptionError("coordinator_epoch", coordinator_epoch, "must fit in an int32")
    return (_KEY.pack(CONTROL_KEY_VERSION, control_type),
            _MARKER_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch))
