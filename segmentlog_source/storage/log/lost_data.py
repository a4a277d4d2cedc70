"""What the files around a partition's segments say is missing from them.

A reader trusts no byte the CRC does not cover: file names, checkpoints and snapshots are
checked against the segments here, so a lost segment or tail is reported, not read around.
"""

from __future__ import annotations

from ..log_files import (DELETED_SUFFIX, HIGH_WATERMARK_CHECKPOINT, INDEX_SUFFIXES,
                         LOG_START_OFFSET_CHECKPOINT, LOG_SUFFIX, RECOVERY_POINT_CHECKPOINT,
                         SNAPSHOT_SUFFIX, file_name, kind_of)


class Lost(str):
    """One sentence of lost_data; `past_end`: it is about offsets past the log end (a tail
    lost), not about files missing below it."""
    past_end = False


def _past_end(sentence: str) -> Lost:
    lost = Lost(sentence)
    lost.past_end = True
    return lost


def lost_data(log, end: int | None = None) -> list[str]:
    """What the files around the segments say is missing from them, one sentence each:
    index files whose `.log` is gone (unless a `.log.deleted` says retention was taking
    it) or empty, and a producer snapshot or a data-directory checkpoint (recovery point, high
    watermark, log start offset) beyond the log end offset (the tail was lost).

    All is judged on the listing open() made and on checkpoints read before the log end
    offset is taken: a writer appending meanwhile only adds what lies beyond both.
    `end`: the log end offset, when the caller knows it (else the segments say)."""
    if not log.segments:
        return []
    found: list[str] = []
    fs = log.fs
    names = log.listing if log.listing is not None else fs.list_dir(log.directory)
    checkpoints = [(name, what, log.data_dir_checkpoint(name).get(
        (log.topic, log.partition))) for name, what in (
        (RECOVERY_POINT_CHECKPOINT, "recovery point"),
        (HIGH_WATERMARK_CHECKPOINT, "high watermark"),
        (LOG_START_OFFSET_CHECKPOINT, "log start offset"))]
    logs = {s.base_offset for s in log.segments}    # (from the same listing)
    orphans: dict[int, list[str]] = {}
    for name in names:
        kind = kind_of(name)
        if (kind is not None and kind[1] in INDEX_SUFFIXES and kind[0] not in logs
                and file_name(kind[0], LOG_SUFFIX + DELETED_SUFFIX) not in names):
            orphans.setdefault(kind[0], []).append(name)
    for base, files in sorted(orphans.items()):
        found.append(Lost(f"{' and '.join(fs.join(log.directory, n) for n in files)} have "
                          f"no {file_name(base, LOG_SUFFIX)}: the segment holding offsets "
                          f"from {base} is missing"))
    for segment in log.segments[:-1]:   # a closed segment's indexes are trimmed
        if segment.size == 0 and any(
                name in names and fs.size(fs.join(log.directory, name)) > 0
                for name in (file_name(segment.base_offset, suffix)
                             for suffix in (".index", ".timeindex"))):
            found.append(Lost(f"{segment.log_path} is empty, but its indexes list batches: "
                              f"the segment's data is missing"))
    end = log.log_end_offset if end is None else end
    snapshots = log.snapshot_offsets()
    if snapshots and snapshots[-1] > end:
        found.append(_past_end(
            f"{fs.join(log.directory, file_name(snapshots[-1], SNAPSHOT_SUFFIX))} "
            f"says the log reached offset {snapshots[-1]}, but its segments end at "
            f"{end}: offsets {end}..{snapshots[-1] - 1} are missing"))
    for name, what, offset in checkpoints:
        if offset is not None and offset > end:
            found.append(_past_end(
                f"{fs.join(fs.dirname(log.directory), name)} puts the "
                f"{what} of {log.name} at {offset}, but its segments end at {end}: "
                f"offsets {end}..{offset - 1} are missing"))
    return found
