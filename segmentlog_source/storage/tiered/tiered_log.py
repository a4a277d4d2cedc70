"""One partition across both tiers: the remote tier's live copies, then the local segments, each
offset once, as one PartitionLog the planner reads like any other.

Which copies are live is `__remote_log_metadata`'s to say (remote_log_metadata.py): copies
whose copy finished, on the partition's leader-epoch lineage, one per offset. Without it the
tier's listing is all there is, and a listing cannot tell a finished copy from one cut short,
nor an orphan left by a failed copy or a deposed leader from the live one: `from_listing` keeps
complete filesets (of copies sharing a start offset, the one reaching furthest), and says so
in a warning.

Where both tiers hold a segment (copied, not yet deleted locally) the local one is read: the
remote copies end where the local log starts. The partition's log start offset is the data
directory's log-start-offset-checkpoint (which, with tiered storage, counts the remote tier),
or without a data directory what the metadata says Kafka would find.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import CorruptDataError
from ..log.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint
from ..log.log_segment import LogSegment
from ..log.partition_log import PartitionLog
from ..log_files import LEADER_EPOCH_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, LOG_SUFFIX
from .cut_copy import CutCopyFiles, cut_position, reaches
from .local_tiered_storage import RemoteCopy


@dataclass
class LiveCopies:
    """A partition's copies to read, in offset order, and what choosing them found."""

    copies: list[RemoteCopy]
    warnings: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)     # listed as live, absent from the store
    log_start_offset: int | None = None               # the metadata's, when there is no local
    last_offsets: dict[str, int] = field(default_factory=dict)   # segment id -> the metadata's
    cuts: dict[str, int] = field(default_factory=dict)  # segment id -> where a later copy starts
    off_lineage: list = field(default_factory=list)   # (first, last, segment id) left aside
    # segment id -> (max timestamp, next offset) of a copy read whole, from its metadata
    # record: what lookups by timestamp pass over it on (LogSegment.vouched)
    vouched: dict[str, tuple[int, int]] = field(default_factory=dict)


def from_metadata(metadata, copies: list[RemoteCopy], topic_id: str, partition: int, *,
                  leader_epochs=None, log_end_offset: int | None = None,
                  missing_hint: str = "") -> LiveCopies:
    """The copies `__remote_log_metadata` says are live (finished, on the lineage, one per
    offset); one it lists whose files the store lacks, or offsets no live copy holds, are
    lost data. A copy a later one takes part of over is read up to where that one starts
    (the next copy's base offset is where the planner and the executor stop reading it)."""
    by_id = {c.segment_id: c for c in copies}
    result = metadata.live_segments(topic_id, partition, leader_epochs=leader_epochs,
                                    log_end_offset=log_end_offset)
    live = LiveCopies([], log_start_offset=metadata.log_start_offset(topic_id, partition,
                                                                     leader_epochs))
    live.warnings += [str(s) for s in (*result.shadowed, *result.outside_lineage)]
    live.off_lineage = [(s.first_offset, s.last_offset, s.segment_id)
                        for s in result.outside_lineage]
    for segment in result.segments:
        copy = by_id.get(segment.segment_id)
        if copy is None or LOG_SUFFIX not in copy.suffixes:
            live.lost.append(f"remote segment {segment.segment_id} (offsets "
                             f"{segment.first_offset}..{segment.last_offset}) of "
                             f"{segment.topic}-{partition} finished copying, says "
                             f"__remote_log_metadata, but the remote tier has no .log for it"
                             f"{missing_hint}")
            continue
        if segment.first_offset != segment.start_offset:
            # (a floor lookup only ever cuts a copy's tail: its head is where its file starts)
            raise CorruptDataError(f"{segment.topic}-{partition}: remote segment "
                                   f"{segment.segment_id} would be read from offset "
                                   f"{segment.first_offset}, inside it", copy.log_path)
        live.copies.append(copy)
        live.last_offsets[copy.segment_id] = segment.last_offset
        if segment.last_offset < segment.end_offset:
            live.cuts[copy.segment_id] = segment.last_offset + 1
        elif copy.start_offset == segment.start_offset:   # (its name agrees with its record)
            live.vouched[copy.segment_id] = (segment.metadata.max_timestamp,
                                             segment.end_offset + 1)
    start = live.log_start_offset or 0
    name = f"{copies[0].topic}-{partition}" if copies else f"topic id {topic_id} {partition}"
    for first, last in result.gaps:
        if last >= start:
            live.lost.append(f"offsets {max(first, start)}..{last} of {name} are in no live "
                             f"remote segment, says __remote_log_metadata")
    return live


def from_listing(copies: list[RemoteCopy], name: str, end_of) -> LiveCopies:
    """Without `__remote_log_metadata`: complete filesets, each offset once. Of several copies
    at one start offset the one reaching furthest is read (`end_of(copy)`: its next offset,
    from its files, read only for such copies): a new leader's copy may span several of the
    old leader's, and the next one, starting inside it, then fails the executor's check that
    a segment's batches end below the next one's base offset (an error naming both)."""
    live = LiveCopies([], warnings=[
        f"{name}: no __remote_log_metadata given (option remoteLogMetadata): the remote "
        f"tier's listing is read as it is, and a listing cannot tell a finished copy from one "
        f"still being written or left by a failed copy or a deposed leader; a copy may be "
        f"missed, orphaned or duplicated"])
    by_start: dict[int, list[RemoteCopy]] = {}
    for copy in copies:
        by_start.setdefault(copy.start_offset, []).append(copy)
    for start, found in sorted(by_start.items()):
        complete = [c for c in found if c.complete]
        if not complete:
            live.warnings.append(f"{found[0].prefix}: no complete copy at offset {start} "
                                 f"(files {', '.join(found[0].suffixes)}): skipped")
            continue
        ends = {c.segment_id: end_of(c) for c in complete} if len(complete) > 1 else {}
        chosen = max(complete, key=lambda c: ends[c.segment_id]) if ends else complete[0]
        if ends:
            live.warnings.append(f"{len(complete)} complete copies of the segment at offset "
                                 f"{start} ({', '.join(c.segment_id for c in complete)}): "
                                 f"{chosen.segment_id}, reaching furthest, is read")
        live.copies.append(chosen)
    return live


def tiered_log(name: str, live: LiveCopies, local: PartitionLog | None, copy_fs, *,
               stats=None, salvage: bool = False) -> PartitionLog:
    """The PartitionLog of `live`'s copies below the local log's first segment, then the
    local segments. `copy_fs(copy)` is the file system that serves a copy's files."""
    first_local = local.segments[0].base_offset if local is not None and local.segments \
        else None
    remote = [c for c in live.copies if first_local is None or c.start_offset < first_local]

    def segment(copy: RemoteCopy, fs, vouched=None) -> LogSegment:
        return LogSegment(copy.prefix.rsplit("/", 1)[0], copy.start_offset, fs,
                          log_path=copy.log_path, files_prefix=copy.prefix, stats=stats,
                          rebuild_bad_indexes=salvage, vouched=vouched)

    segments = []
    for i, copy in enumerate(remote):
        fs = copy_fs(copy)
        cut = live.cuts.get(copy.segment_id)
        if cut is None and i + 1 == len(remote) and first_local is not None \
                and reaches(segment(copy, fs), first_local):
            cut = first_local    # replicas roll at other offsets: the local log serves these
        if cut is not None:      # read up to where the later copy starts (cut_copy.py)
            end = cut_position(segment(copy, fs), cut, name)
            fs = CutCopyFiles(fs, copy.prefix, copy.start_offset, cut, end)
        # (salvaging, the files decide: the metadata vouches for no damaged copy's bytes)
        segments.append(segment(copy, fs, None if cut is not None or salvage
                                else live.vouched.get(copy.segment_id)))
    for before, after in zip(remote, remote[1:]):
        if after.start_offset <= before.start_offset:   # (where a copy ends, the batches and
            # the next base offset say: the executor checks them as in a local log)
            raise CorruptDataError(f"two remote copies of {name} start at offset "
                                   f"{after.start_offset}", after.log_path)
    if local is None:
        if not segments:
            raise CorruptDataError(f"{name}: the remote tier holds no segment of it to read")
        first, last = remote[0], remote[-1]
        if last.segment_id in live.last_offsets:
            # (the next copy's base offset checks where each copy ends; nothing follows this)
            end, copied = segments[-1].read_next_offset(), live.last_offsets[last.segment_id]
            if end <= copied:
                live.lost.append(f"offsets {end}..{copied} of {name} are missing: remote "
                                 f"segment {last.segment_id} was copied up to {copied}, says "
                                 f"__remote_log_metadata, but its .log ends at {end - 1}")
        start = max(live.log_start_offset or 0, first.start_offset)
        return PartitionLog(segments[0].fs, segments[0].directory, first.topic,
                            first.partition, segments, start)
    checkpoint = read_offset_checkpoint(
        local.fs.join(local.fs.dirname(local.directory), LOG_START_OFFSET_CHECKPOINT), local.fs)
    all_segments = segments + local.segments
    logged_start = checkpoint.get((local.topic, local.partition), 0)
    start = max(logged_start, all_segments[0].base_offset) if all_segments \
        else local.log_start_offset
    _lost_off_lineage(live, name, logged_start, start, local)
    log_ = PartitionLog(local.fs, local.directory, local.topic, local.partition, all_segments,
                        start)
    log_.listing = local.listing
    return log_


def _lost_off_lineage(live: LiveCopies, name: str, logged_start: int, first: int,
                      local: PartitionLog) -> None:
    """Offsets between the partition's log start and the first one read that only copies off
    the leader-epoch lineage hold: the lineage (a text file no CRC covers) disowns finished
    copies the log start says are the partition's. Lost data, not a quiet later start."""
    for low, high, segment_id in live.off_lineage:
        lo, hi = max(low, logged_start), min(high, first - 1)
        if lo <= hi:
            live.lost.append(
                f"offsets {lo}..{hi} of {name} are missing: the log starts at {logged_start} "
                f"(log-start-offset-checkpoint), and only remote segment {segment_id} holds "
                f"them, finished but off the leader-epoch lineage of "
                f"{local.fs.join(local.directory, LEADER_EPOCH_CHECKPOINT)} (is it damaged?)")


def leader_epochs(local: PartitionLog | None) -> list[tuple[int, int]] | None:
    """The lineage a broker checks remote copies against: its leader-epoch-checkpoint."""
    if local is None:
        return None
    path = local.fs.join(local.directory, LEADER_EPOCH_CHECKPOINT)
    entries = read_leader_epoch_checkpoint(path, local.fs)
    return [(e.epoch, e.start_offset) for e in entries] or None
