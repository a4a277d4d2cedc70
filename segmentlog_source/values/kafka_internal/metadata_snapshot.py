"""The metadata records of a KRaft snapshot, decoded and redacted: storage/log/kraft_snapshot.py
checks the file (header first, footer last, CRCs, offsets), metadata_records.py decodes each
record. Any failure is a CorruptDataError naming the file, the batch's byte and the offset."""

from __future__ import annotations

from ...errors import CorruptDataError
from ...storage.log.kraft_snapshot import KraftSnapshot, read_kraft_snapshot
from .metadata_records import MetadataRecord, MetadataRecordError, decode_metadata, redact


def snapshot_metadata(fs, path: str, *, redacted: bool = True
                      ) -> tuple[KraftSnapshot, list[tuple[int, MetadataRecord]]]:
    """The snapshot and its (offset, record) pairs, secrets redacted unless `redacted=False`
    (for code that needs the values themselves, never to show them)."""
    snapshot = read_kraft_snapshot(fs, path)
    out = []
    for r in snapshot.records:
        try:
            record = decode_metadata(r.value)
        except MetadataRecordError as err:
            raise CorruptDataError(f"KRaft snapshot: offset {r.offset}: {err.reason}", path,
                                   r.position) from None
        out.append((r.offset, redact(record) if redacted else record))
    return snapshot, out
