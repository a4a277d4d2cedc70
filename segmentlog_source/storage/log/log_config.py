"""The topic configs that shape a partition's files and their upkeep, with Kafka's defaults
(spec §7, §12). topic_configs.py keeps them per topic in the data directory."""

from __future__ import annotations

from dataclasses import dataclass, field
import random
import time
from typing import Callable

from ...errors import BadOptionError
from ...format.batch import INT32_MAX
from .abstract_index import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_INDEX_BYTES

FSYNC_POLICIES = ("none", "close", "always")
# cleanup.policy: Kafka takes a list of `delete` and `compact` (either order, both allowed).
CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
DAY_MS = 24 * 3600 * 1000


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class LogConfig:
    """`segment_bytes` .. `index_interval_bytes` are Kafka's topic configs of the same names.

    `cleanup_policy` .. `file_delete_delay_ms` are the retention and cleaner settings of the
    same Kafka names (retention_ms/retention_bytes -1: unlimited).

    `fsync`: "none" never syncs (a process crash loses nothing, a power cut may), "close"
    syncs a segment when it is rolled and the partition when it is closed, "always" also syncs
    after every append. `clock_ms` gives "now" for the wall-clock fallback of time-based rolls.
    """

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = DEFAULT_MAX_INDEX_BYTES
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    cleanup_policy: str = "delete"
    retention_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    delete_retention_ms: int = DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 2**63 - 1
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60_000
    fsync: str = "close"
    clock_ms: Callable[[], int] = field(default=_wall_clock_ms, compare=False)

    def __post_init__(self):
        if not 14 <= self.segment_bytes <= INT32_MAX:
            raise BadOptionError("segment_bytes", self.segment_bytes,
                                 f"must be between 14 and {INT32_MAX} (positions are int32)")
        if self.segment_ms < 1:
            raise BadOptionError("segment_ms", self.segment_ms, "must be at least 1")
        if self.segment_jitter_ms < 0:
            raise BadOptionError("segment_jitter_ms", self.segment_jitter_ms, "must be >= 0")
        if self.segment_index_bytes < 12 * 2:
            raise BadOptionError("segment_index_bytes", self.segment_index_bytes,
                                 "must hold at least two time-index entries (24 bytes)")
        if self.index_interval_bytes < 0:
            raise BadOptionError("index_interval_bytes", self.index_interval_bytes, "must be >= 0")
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise BadOptionError("cleanup_policy", self.cleanup_policy,
                                 "must be delete, compact, or compact,delete")
        for name in ("retention_ms", "retention_bytes"):
            if getattr(self, name) < -1:
                raise BadOptionError(name, getattr(self, name), "must be >= -1 (-1: unlimited)")
        for name in ("delete_retention_ms", "min_compaction_lag_ms", "file_delete_delay_ms"):
            if getattr(self, name) < 0:
                raise BadOptionError(name, getattr(self, name), "must be >= 0")
        if self.max_compaction_lag_ms < max(1, self.min_compaction_lag_ms):
            raise BadOptionError("max_compaction_lag_ms", self.max_compaction_lag_ms,
                                 "must be >= 1 and >= min.compaction.lag.ms")
        if not 0 <= self.min_cleanable_dirty_ratio <= 1:
            raise BadOptionError("min_cleanable_dirty_ratio", self.min_cleanable_dirty_ratio,
                                 "must be between 0 and 1")
        if self.fsync not in FSYNC_POLICIES:
            raise BadOptionError("fsync", self.fsync, f"must be one of {', '.join(FSYNC_POLICIES)}")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    def roll_jitter_ms(self) -> int:
        """Chosen per segment, as `LogSegment` does: abs(random int) % min(jitter, segment.ms)."""
        if self.segment_jitter_ms == 0:
            return 0
        return random.randrange(2**31) % min(self.segment_jitter_ms, self.segment_ms)
