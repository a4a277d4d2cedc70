"""Deleting and replacing a partition's segment files as a broker does (Kafka's LocalLog).

Deleting (retention, a cleaned segment's sources): each file of the segment is first renamed
with `.deleted`, so that a name the reader listed either still opens the same bytes (a reader
that already opened it keeps reading them) or is gone (a clear missing-file error, never other
bytes under the old name); then the renamed files are removed. A crash in between leaves
`.deleted` files, which the next load removes (log_loader.py, §9.1 step 2).

Replacing (the swap protocol of the cleaner, §9.4): the new segments are written complete as
`.cleaned` files; renamed `.cleaned` -> `.swap` from the highest base offset down, so the log
is committed to the new content exactly when the lowest one is renamed (a load finding any
`.cleaned` file drops the swaps above it); the old segments are deleted as above; the `.swap`
suffix is removed; the directory is synced. A crash at any point reopens to either the old or
the new segments, never a mix.
"""

from __future__ import annotations

from ..log_files import (CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIXES, LOG_SUFFIX,
                         SNAPSHOT_SUFFIX, SWAP_SUFFIX, file_name)
from .log_segment import LogSegment

SEGMENT_SUFFIXES = (LOG_SUFFIX, *INDEX_SUFFIXES)


def segment_file_names(base_offset: int) -> list[str]:
    return [file_name(base_offset, suffix) for suffix in SEGMENT_SUFFIXES]


def mark_deleted(fs, directory: str, names: list[str]) -> list[str]:
    """Rename each existing file `<name>` to `<name>.deleted`; returns the new names."""
    renamed = []
    for name in names:
        path = fs.join(directory, name)
        if fs.exists(path):
            fs.rename(path, path + DELETED_SUFFIX)
            renamed.append(name + DELETED_SUFFIX)
    return renamed


def remove_files(fs, directory: str, names: list[str]) -> None:
    for name in names:
        fs.remove(fs.join(directory, name))


def delete_segments(fs, directory: str, segments: list[LogSegment], *,
                    snapshots: bool = True, sync: bool = True) -> None:
    """Delete `segments` (and the producer snapshots named after their base offsets): rename
    to `.deleted`, sync the directory, remove."""
    names = []
    for segment in segments:
        segment.forget_cached_state()   # no mapping of an index may outlive its file
        names += segment_file_names(segment.base_offset)
        if snapshots:
            names.append(file_name(segment.base_offset, SNAPSHOT_SUFFIX))
    renamed = mark_deleted(fs, directory, names)
    if sync:
        fs.fsync_dir(directory)
    remove_files(fs, directory, renamed)


def cleaned_name(name: str) -> str:
    return name + CLEANED_SUFFIX


def replace_segments(fs, directory: str, new_bases: list[int], old: list[LogSegment], *,
                     sync: bool = True) -> None:
    """Swap in the complete `.cleaned` segments at `new_bases` for the segments `old`."""
    for base in sorted(new_bases, reverse=True):
        for name in segment_file_names(base):
            path = fs.join(directory, cleaned_name(name))
            if fs.exists(path):
                fs.rename(path, fs.join(directory, name + SWAP_SUFFIX))
    if sync:
        fs.fsync_dir(directory)
    # Old segments at a new segment's base offset have the live names the swap files will take;
    # the producer snapshots of the others name segments that no longer exist.
    delete_segments(fs, directory, old, snapshots=False, sync=sync)
    remove_files(fs, directory, [file_name(s.base_offset, SNAPSHOT_SUFFIX) for s in old
                                 if s.base_offset not in new_bases])
    for base in new_bases:
        for name in segment_file_names(base):
            path = fs.join(directory, name + SWAP_SUFFIX)
            if fs.exists(path):
                fs.rename(path, fs.join(directory, name))
    if sync:
        fs.fsync_dir(directory)
