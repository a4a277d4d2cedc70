"""Reader options, with the names and meanings of Spark's own Kafka source.

Spark hands options over as strings in a case-insensitive dict; this module turns them into one
frozen `ReadOptions` and rejects bad values with a BadOptionError naming the option. Offsets in
the JSON forms use Kafka's sentinels: -2 = earliest, -1 = latest.

Where Spark's Kafka source is stricter than a directory of logs needs (it requires every
subscribed partition in a JSON offsets map), partitions missing from the map take the default
bound (earliest for a start, latest for an end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
import re
from typing import Mapping

from ..errors import BadOptionError
from ..storage.io.store_config import DEFAULT_CONFIG, StoreConfig
from .option_values import bool_option, choice_option, int_option
from .scan_plan import MAX_GROUPS
from .store_options import parse_store_options

EARLIEST = -2
LATEST = -1

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
TIMESTAMP_STRATEGIES = ("error", "latest")

# topic -> partition -> value; None means "every partition of that topic"
PartitionMap = Mapping[str, Mapping[int, int]]


@dataclass(frozen=True)
class BoundSpec:
    """One end of the range: Kafka offsets, timestamps per partition, or a global timestamp."""

    default: int  # EARLIEST or LATEST: what a partition gets when nothing else names it
    offsets: PartitionMap = field(default_factory=dict)
    timestamps: PartitionMap = field(default_factory=dict)
    global_timestamp: int | None = None

    def by_timestamp(self) -> bool:
        return self.global_timestamp is not None or bool(self.timestamps)


@dataclass(frozen=True)
class ReadOptions:
    paths: tuple[str, ...]
    assign: PartitionMap | None = None            # topic -> {partition: 0} (values unused)
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    starting: BoundSpec = field(default_factory=lambda: BoundSpec(EARLIEST))
    ending: BoundSpec = field(default_factory=lambda: BoundSpec(LATEST))
    starting_timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_bytes_per_partition: int = 128 * 1024 * 1024
    isolation_level: str = "read_uncommitted"
    include_headers: bool = False
    include_payload: bool = True                  # False: no key, value, headers columns
    verify_checksums: bool = True
    pushdown: bool = False
    store: StoreConfig = DEFAULT_CONFIG           # the fs.* options (object stores, HDFS)

    def selects_topic(self, topic: str) -> bool:
        if self.assign is not None:
            return topic in self.assign
        if self.subscribe is not None:
            return topic in self.subscribe
        if self.subscribe_pattern is not None:
            return re.fullmatch(self.subscribe_pattern, topic) is not None
        return True

    def selects_partition(self, topic: str, partition: int) -> bool:
        if not self.selects_topic(topic):
            return False
        return self.assign is None or partition in self.assign[topic]

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"


def parse_read_options(options: Mapping[str, str]) -> ReadOptions:
    """Parse Spark's (case-insensitive, all-string) options into ReadOptions."""
    opts = {str(k).lower(): v for k, v in options.items()}
    paths = _paths(opts)

    selectors = [k for k in ("assign", "subscribe", "subscribepattern") if opts.get(k)]
    if len(selectors) > 1:
        raise BadOptionError(selectors[1], opts[selectors[1]],
                             'only one of "assign", "subscribe" or "subscribePattern" may be set')
    assign = _assign(opts["assign"]) if "assign" in selectors else None
    subscribe = None
    if "subscribe" in selectors:
        subscribe = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not subscribe:
            raise BadOptionError("subscribe", opts["subscribe"], "names no topic")
    pattern = None
    if "subscribepattern" in selectors:
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise BadOptionError("subscribePattern", pattern, f"not a regex: {exc}") from None

    starting = _bound(opts, "starting", EARLIEST)
    ending = _bound(opts, "ending", LATEST)

    return ReadOptions(
        paths=paths,
        assign=assign,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        starting=starting,
        ending=ending,
        starting_timestamp_strategy=choice_option(opts, "startingOffsetsByTimestampStrategy",
                                            TIMESTAMP_STRATEGIES, "error"),
        fail_on_data_loss=bool_option(opts, "failOnDataLoss", True),
        # every group is a Spark task: bounds that keep a plan to what a cluster can run
        min_partitions=int_option(opts, "minPartitions", None, maximum=MAX_GROUPS),
        max_bytes_per_partition=int_option(opts, "maxBytesPerPartition", 128 * 1024 * 1024,
                                           minimum=64 * 1024),
        isolation_level=choice_option(opts, "isolationLevel", ISOLATION_LEVELS, "read_uncommitted"),
        include_headers=bool_option(opts, "includeHeaders", False),
        include_payload=bool_option(opts, "includePayload", True),
        verify_checksums=bool_option(opts, "verifyChecksums", True),
        pushdown=bool_option(opts, "pushdown", False),
        store=parse_store_options(opts),
    )


def _paths(opts: dict) -> tuple[str, ...]:
    if opts.get("paths"):
        try:
            paths = json.loads(opts["paths"])
        except ValueError:
            raise BadOptionError("paths", opts["paths"], "not a JSON array of paths") from None
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise BadOptionError("paths", opts["paths"], "not a JSON array of paths")
        if opts.get("path"):
            paths = [opts["path"], *paths]
        return tuple(paths)
    if opts.get("path"):
        return (opts["path"],)
    raise BadOptionError("path", None, "no path given: use load(path) or .option('path', ...)")


def _json_object(name: str, raw: str) -> dict:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise BadOptionError(name, raw, f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadOptionError(name, raw, "expected a JSON object")
    return value


def _assign(raw: str) -> PartitionMap:
    value = _json_object("assign", raw)
    out = {}
    for topic, parts in value.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and p >= 0 for p in parts):
            raise BadOptionError("assign", raw,
                                 f'expected {{"topic": [partition, ...]}}, got {topic!r}: {parts!r}')
        out[topic] = {p: 0 for p in parts}
    return out


def _partition_map(name: str, raw: str, allowed_negative: tuple[int, ...]) -> PartitionMap:
    value = _json_object(name, raw)
    out: dict[str, dict[int, int]] = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            raise BadOptionError(name, raw, f'expected {{"topic": {{"partition": value}}}} '
                                            f"for topic {topic!r}")
        out[topic] = {}
        for part, number in parts.items():
            try:
                partition = int(part)
            except ValueError:
                raise BadOptionError(name, raw, f"partition {part!r} is not a number") from None
            if not isinstance(number, int) or isinstance(number, bool):
                raise BadOptionError(name, raw, f"{topic}-{part}: {number!r} is not an integer")
            if number < 0 and number not in allowed_negative:
                allowed = " or ".join(str(n) for n in allowed_negative) or "none"
                raise BadOptionError(name, raw, f"{topic}-{part}: {number} is not allowed here "
                                                f"(negative values allowed: {allowed})")
            out[topic][partition] = number
    return out


def _timestamp(name: str, raw: str) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise BadOptionError(name, raw, "expected milliseconds since the epoch") from None
    if value < 0:
        raise BadOptionError(name, raw, "a timestamp cannot be negative")
    return value


def _bound(opts: dict, which: str, default: int) -> BoundSpec:
    """startingX or endingX. Precedence as in Spark: xTimestamp > xOffsetsByTimestamp > xOffsets."""
    offsets_name = f"{which}Offsets"
    by_ts_name = f"{which}OffsetsByTimestamp"
    ts_name = f"{which}Timestamp"
    if opts.get(ts_name.lower()) is not None:
        return BoundSpec(default, global_timestamp=_timestamp(ts_name, opts[ts_name.lower()]))
    if opts.get(by_ts_name.lower()) is not None:
        raw = opts[by_ts_name.lower()]
        timestamps = _partition_map(by_ts_name, raw, ())
        return BoundSpec(default, timestamps=timestamps)
    raw = opts.get(offsets_name.lower())
    if raw is None:
        return BoundSpec(default)
    text = str(raw).strip()
    if text.lower() == "earliest":
        if which == "ending":
            raise BadOptionError(offsets_name, raw, "earliest is not allowed for the end of a "
                                                    "batch query")
        return BoundSpec(EARLIEST)
    if text.lower() == "latest":
        if which == "starting":
            raise BadOptionError(offsets_name, raw, "latest is not allowed for the start of a "
                                                    "batch query")
        return BoundSpec(LATEST)
    # Batch queries: a start cannot be "latest" (-1) and an end cannot be "earliest" (-2).
    allowed = (EARLIEST,) if which == "starting" else (LATEST,)
    return BoundSpec(default, offsets=_partition_map(offsets_name, text, allowed))
