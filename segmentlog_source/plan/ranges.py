"""Reader options -> one offset range `[start, end)` per topic-partition (Kafka source semantics).

Starting and ending bounds are resolved the way Spark's Kafka source resolves them against a
broker: -2/"earliest" is the log start offset, -1/"latest" the log end offset, a timestamp is
the ListOffsets answer (the first offset whose record timestamp is >= it). Offsets outside the
log are data loss: an error naming the partition, or, with failOnDataLoss=false, clamped and
reported in `OffsetRange.notes`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import BadOptionError, DataLossError
from .options import EARLIEST, LATEST, BoundSpec, ReadOptions

log = logging.getLogger("segmentlog")


class LookupView(Protocol):
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None: ...


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int
    notes: tuple[str, ...] = field(default=())


def _option_names(which: str, spec: BoundSpec) -> str:
    if spec.global_timestamp is not None:
        return f"{which}Timestamp"
    if spec.timestamps:
        return f"{which}OffsetsByTimestamp"
    return f"{which}Offsets"


def _resolve(part: LookupView, which: str, spec: BoundSpec, opts: ReadOptions,
             notes: list[str]) -> int:
    name = _option_names(which, spec)
    tp = f"{part.topic}-{part.partition}"
    timestamp = spec.global_timestamp
    if timestamp is None and spec.timestamps:
        timestamp = spec.timestamps.get(part.topic, {}).get(part.partition)
    if timestamp is not None:
        found = part.offset_for_timestamp(timestamp)
        if found is not None:
            return found
        if which == "starting" and opts.starting_timestamp_strategy == "error":
            raise BadOptionError(
                name, timestamp,
                f"no record of {tp} has a timestamp >= {timestamp} (set "
                "startingOffsetsByTimestampStrategy=latest to start at the end instead)")
        return part.log_end_offset
    offset = spec.offsets.get(part.topic, {}).get(part.partition, spec.default)
    if offset == EARLIEST:
        return part.log_start_offset
    if offset == LATEST:
        return part.log_end_offset
    return _checked(part, name, offset, opts, notes)


def _checked(part: LookupView, name: str, offset: int, opts: ReadOptions,
             notes: list[str]) -> int:
    tp = f"{part.topic}-{part.partition}"
    if part.log_start_offset <= offset <= part.log_end_offset:
        return offset
    unstable_end = getattr(part, "unstable_end", None)
    if unstable_end is not None and part.log_end_offset < offset <= unstable_end:
        raise BadOptionError(
            name, offset, f"an open transaction holds {tp} at its last stable offset "
            f"{part.log_end_offset}: end there, or read with isolationLevel=read_uncommitted",
            "read_committed reads nothing past the last stable offset until the transaction "
            "ends (Kafka's consumer waits there)")
    clamped = min(max(offset, part.log_start_offset), part.log_end_offset)
    message = (f"{name}: offset {offset} of {tp} is outside the log, which holds "
               f"[{part.log_start_offset}, {part.log_end_offset})")
    if opts.fail_on_data_loss:
        raise DataLossError(message + " (set failOnDataLoss=false to read what is there)")
    notes.append(message + f"; reading from {clamped}")
    log.warning(message + "; reading from %d", clamped)
    return clamped


def resolve_range(part: LookupView, opts: ReadOptions) -> OffsetRange:
    notes: list[str] = []
    start = _resolve(part, "starting", opts.starting, opts, notes)
    end = _resolve(part, "ending", opts.ending, opts, notes)
    if start > end:
        raise BadOptionError(
            _option_names("starting", opts.starting), start,
            f"{part.topic}-{part.partition}: the starting offset {start} is after the ending "
            f"offset {end}")
    return OffsetRange(part.topic, part.partition, start, end, tuple(notes))


def check_named_partitions(opts: ReadOptions, found: set[tuple[str, int]],
                           topics: set[str]) -> None:
    """Topics and partitions that the options name explicitly must exist in the log."""
    if opts.assign is not None:
        for topic, parts in opts.assign.items():
            for p in parts:
                if (topic, p) not in found:
                    raise BadOptionError("assign", f"{topic}-{p}",
                                         f"no partition {topic}-{p} under {', '.join(opts.paths)}")
    if opts.subscribe is not None:
        missing = [t for t in opts.subscribe if t not in topics]
        if missing:
            raise BadOptionError("subscribe", ",".join(missing),
                                 f"unknown topic(s); the log holds: {', '.join(sorted(topics))}")
    for spec, which in ((opts.starting, "starting"), (opts.ending, "ending")):
        for mapping in (spec.offsets, spec.timestamps):
            for topic, parts in mapping.items():
                for p in parts:
                    if (topic, p) not in found:
                        raise BadOptionError(_option_names(which, spec), f"{topic}-{p}",
                                             f"no partition {topic}-{p} in the log")
