"""Reader options, with the names and meanings of Spark's own Kafka source.

Spark hands options over as strings in a case-insensitive dict; this module turns them into one
frozen `ReadOptions` and rejects bad values with a BadOptionError naming the option. Offsets in
the JSON forms use Kafka's sentinels: -2 = earliest, -1 = latest.

Where Spark's Kafka source is stricter than a directory of logs needs (it requires every
subscribed partition in a JSON offsets map, and one of assign / subscribe / subscribePattern),
partitions missing from the map take the default bound (earliest for a start, latest for an
end), and no selector reads every topic under the path. Names are checked first
(option_names.py): an unknown name is an error, never a silent change of rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
import json
import re
from typing import Mapping

from ..errors import BadOptionError
from ..storage.io.store_config import DEFAULT_CONFIG, StoreConfig
from ..values import iso_time
from ..values.decoding_spec import DecodingSpec
from . import option_table
from .option_names import Screened, screen
from .option_values import bool_option, choice_option, int_option
from .scan_plan import MAX_GROUPS
from .store_options import parse_store_options
from .value_options import parse_decoding

EARLIEST = -2
LATEST = -1
MAX_BYTES = 128 * 1024 * 1024           # maxBytesPerPartition's default
DECODING_MAX_BYTES = 32 * 1024 * 1024   # ... when keys or values are decoded
VIEW_MAX_BYTES = 2 * 1024 * 1024 * 1024  # ... in the metadata views

ISOLATION_LEVELS = option_table.choices("isolationLevel")
# What a row is: a record (Spark's Kafka source's rows), a record batch, or a segment file
# (the metadata views: spark/metadata_views.py).
VIEWS = option_table.choices("view")
TIMESTAMP_STRATEGIES = option_table.choices("startingOffsetsByTimestampStrategy")
SELECTORS = ("assign", "subscribe", "subscribePattern")
# Kafka's internal topics (Topic.isInternal): Spark's subscribePattern never matches them, since
# the admin client's topic listing leaves them out (ConsumerStrategy.scala:137-138).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

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
    max_records_per_partition: int | None = None  # offsets per Spark partition (Spark's meaning)
    max_bytes_per_partition: int = MAX_BYTES
    isolation_level: str = "read_uncommitted"
    include_headers: bool = False
    include_payload: bool = True                  # False: no key, value, headers columns
    verify_checksums: bool = True
    pushdown: bool = False
    store: StoreConfig = DEFAULT_CONFIG           # the fs.* options (object stores, HDFS)
    decoding: DecodingSpec = field(default_factory=DecodingSpec)   # keyFormat, valueFormat...
    view: str = "records"
    remote_tier: str | None = None                # a remote tier read below the local logs
    remote_log_metadata: tuple[str, ...] = ()     # where __remote_log_metadata partitions are
    remote_private_key: str | None = None         # keys of an encrypted remote tier
    ignored: tuple[str, ...] = ()                 # accepted options of no effect (one warning)

    def selects_topic(self, topic: str) -> bool:
        if self.assign is not None:
            return topic in self.assign
        if self.subscribe is not None:
            return topic in self.subscribe
        if self.subscribe_pattern is not None:
            # as Spark's default (admin client) topic listing: the pattern found anywhere in the
            # name (Regex.findFirstIn, ConsumerStrategy.scala:140), internal topics never listed
            return (topic not in INTERNAL_TOPICS
                    and re.search(self.subscribe_pattern, topic) is not None)
        return True

    def describe_selection(self) -> str:
        """Which topics the read takes, for the plan's log line."""
        if self.assign is not None:
            return "assign=" + ",".join(f"{t}-{p}" for t, ps in self.assign.items() for p in ps)
        if self.subscribe is not None:
            return "subscribe=" + ",".join(self.subscribe)
        if self.subscribe_pattern is not None:
            return f"subscribePattern={self.subscribe_pattern}"
        return "every topic (no assign, subscribe or subscribePattern given)"

    def selects_partition(self, topic: str, partition: int) -> bool:
        if not self.selects_topic(topic):
            return False
        return self.assign is None or partition in self.assign[topic]

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"


def parse_read_options(options: Mapping[str, str]) -> ReadOptions:
    """Parse Spark's (case-insensitive, all-string) options into ReadOptions."""
    screened = screen(options, "read")
    try:
        return parse_fields(screened)
    except BadOptionError as err:
        raise screened.renamed(err) from None


def parse_fields(screened: Screened, stream: bool = False) -> ReadOptions:
    """ReadOptions from screened names; `stream`: a streaming query's (it starts at latest by
    default and has no end: plan/stream_options.py)."""
    opts = screened.options
    paths = _paths(opts)
    assign, subscribe, pattern = _selector(opts)
    _check_trigger_bounds(opts)
    starting = _bound(opts, "starting", LATEST if stream else EARLIEST, stream)
    ending = BoundSpec(LATEST) if stream else _bound(opts, "ending", LATEST)
    decoding = parse_decoding(opts)
    view = _view(opts, stream, decoding)
    # Decoding runs at ~30 MB/s per core where a scan runs at hundreds: smaller tasks keep
    # every core busy on a topic of a few hundred MB.
    max_bytes = DECODING_MAX_BYTES if decoding.active() else MAX_BYTES
    if view != "records":
        # A view's task reads headers, ~10x faster than decoding records (~0.07 s per GB
        # without CRCs, locally): Spark's fixed cost per task (~30 ms, and a second wave of
        # tasks when there are more than cores) would dominate 128 MiB tasks. Measured on
        # 2.2 GB and 2 cores: 3 tasks of 1 GiB 0.44 s, 2 of 2 GiB 0.35 s, 1 task 0.39 s.
        max_bytes = VIEW_MAX_BYTES

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
        # (a view's row is a batch or a segment: cutting its offsets would split it in two)
        max_records_per_partition=None if view != "records" else int_option(
            opts, "maxRecordsPerPartition", None),
        max_bytes_per_partition=int_option(opts, "maxBytesPerPartition", max_bytes,
                                           minimum=64 * 1024),
        isolation_level=choice_option(opts, "isolationLevel", ISOLATION_LEVELS,
                                      "read_uncommitted"),
        include_headers=bool_option(opts, "includeHeaders", False),
        include_payload=bool_option(opts, "includePayload", True),
        verify_checksums=bool_option(opts, "verifyChecksums", True),
        pushdown=bool_option(opts, "pushdown", False),
        store=parse_store_options(opts),
        decoding=decoding,
        view=view,
        **_remote(opts, stream),
        ignored=screened.ignored,
    )


def _remote(opts: dict, stream: bool) -> dict:
    """remoteTier, remoteLogMetadata, remoteTierPrivateKey: batch reads only (a remote tier
    changes as a broker copies and deletes; a stream tails a local log)."""
    given = {name: opts.get(name.lower()) for name in
             ("remoteTier", "remoteLogMetadata", "remoteTierPrivateKey")}
    for name, value in given.items():
        if value is not None and not value.strip():
            raise BadOptionError(name, value, "give a path or URI")
        if value is not None and stream:
            raise BadOptionError(name, value, "a streaming query tails a local log: the "
                                 "remote tier is read by batch reads (spark.read)")
    metadata = given["remoteLogMetadata"]
    return dict(remote_tier=given["remoteTier"],
                remote_log_metadata=tuple(p.strip() for p in metadata.split(",") if p.strip())
                if metadata else (),
                remote_private_key=given["remoteTierPrivateKey"])


def _view(opts: dict, stream: bool, decoding: DecodingSpec) -> str:
    """The `view` option, refused where its rows would not mean what the other options say."""
    view = choice_option(opts, "view", VIEWS, "records")
    if view == "records":
        return view
    if stream:
        raise BadOptionError("view", view, "a streaming query reads records: the batches and "
                             "segments views are batch reads (spark.read)")
    if decoding.active():
        raise BadOptionError("view", view, f"a {view} view has no key or value column to "
                             "decode: remove keyFormat/valueFormat, or read view=records")
    if bool_option(opts, "includeHeaders", False):
        raise BadOptionError("view", view, f"a {view} view has no headers column: remove "
                             "includeHeaders, or read view=records")
    return view


def _selector(opts: dict) -> tuple[PartitionMap | None, tuple[str, ...] | None, str | None]:
    """assign, subscribe, subscribePattern: Spark's rules (KafkaSourceProvider.scala:227-269),
    except that none at all reads every topic. A selector that is given counts, empty or not:
    an empty one must not fall back to every topic."""
    given = [name for name in SELECTORS if name.lower() in opts]
    if len(given) > 1:
        raise BadOptionError(given[1], None, f"given with {given[0]}: only one of assign, "
                             "subscribe and subscribePattern may be set")
    if not given:
        return None, None, None
    raw = str(opts[given[0].lower()])
    if given[0] == "assign":
        if not raw.strip().startswith("{"):
            raise BadOptionError("assign", raw, 'no topic partitions to assign: expected e.g. '
                                 '{"orders":[0,1]}')
        return _assign(raw), None, None
    if given[0] == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise BadOptionError("subscribe", raw, "no topics to subscribe to: name one or more, "
                                 "comma-separated (or leave subscribe out for every topic)")
        return None, topics, None
    pattern = raw.strip()
    if not pattern:
        raise BadOptionError("subscribePattern", raw, "the pattern to subscribe to is empty: give "
                             "a regex (or leave subscribePattern out for every topic)")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise BadOptionError("subscribePattern", pattern, f"not a regex: {exc}") from None
    return None, None, pattern


def _check_trigger_bounds(opts: dict) -> None:
    """Ignored in a batch read, but Spark still refuses min > max (KafkaSourceProvider.scala:
    340-347), so a job that passes it there fails here too."""
    if "minoffsetspertrigger" in opts and "maxoffsetspertrigger" in opts:
        low = int_option(opts, "minOffsetsPerTrigger", None, minimum=0)
        high = int_option(opts, "maxOffsetsPerTrigger", None, minimum=0)
        if low > high:
            raise BadOptionError("minOffsetsPerTrigger", low, f"higher than "
                                 f"maxOffsetsPerTrigger ({high}); make it at most that")


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


# What each JSON option looks like, for the error that says it is not that (as Spark's
# JsonUtils says "Expected e.g. ...").
_JSON_EXAMPLES = {"assign": '{"orders":[0,1]}', "offsets": '{"orders":{"0":23,"1":-2}}',
                  "timestamps": '{"orders":{"0":1700000000000}}'}


def _json_object(name: str, raw: str, example: str) -> dict:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise BadOptionError(name, raw, f"not valid JSON ({exc.msg} at character {exc.pos}); "
                             f"expected e.g. {_JSON_EXAMPLES[example]}") from None
    if not isinstance(value, dict):
        raise BadOptionError(name, raw, f"expected a JSON object, e.g. {_JSON_EXAMPLES[example]}")
    return value


def _assign(raw: str) -> PartitionMap:
    value = _json_object("assign", raw.strip(), "assign")
    out = {}
    for topic, parts in value.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and p >= 0 for p in parts):
            raise BadOptionError("assign", raw, f"{topic!r}: {parts!r} is not a list of "
                                 f"partition numbers; expected e.g. {_JSON_EXAMPLES['assign']}")
        out[topic] = {p: 0 for p in parts}
    return out


def _partition_map(name: str, raw: str, allowed_negative: tuple[int, ...]) -> PartitionMap:
    value = _json_object(name, raw, "timestamps" if "Timestamp" in name else "offsets")
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
            if "Timestamp" in name and isinstance(number, str):
                try:    # an ISO-8601 time (or ms in a string)
                    number = _timestamp(name, number)
                except BadOptionError as err:
                    raise BadOptionError(name, raw, f"{topic}-{part}: {number!r}: {err.reason}",
                                         err.detail) from None
            if not isinstance(number, int) or isinstance(number, bool):
                raise BadOptionError(name, raw, f"{topic}-{part}: {number!r} is not an integer")
            if number < 0 and number not in allowed_negative:
                allowed = " or ".join(str(n) for n in allowed_negative) or "none"
                raise BadOptionError(name, raw, f"{topic}-{part}: {number} is not allowed here "
                                                f"(negative values allowed: {allowed})")
            out[topic][partition] = number
    return out


def _timestamp(name: str, raw) -> int:
    """Milliseconds since the epoch, given as such (Spark's Kafka source takes only these) or
    as an ISO-8601 time with an explicit zone (`2018-08-15T03:00:00Z`, `...+02:00`): a
    segmentlog addition. A time without a zone is refused, since which zone was meant is not
    known; a finer one than Kafka's milliseconds too, since no record's timestamp is between."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    else:
        text = str(raw).strip()
        try:
            value = int(text)
        except ValueError:
            value = _iso_timestamp(name, raw, text)
    if value < 0:
        raise BadOptionError(name, raw, "a timestamp cannot be negative")
    return value


_ISO_EXAMPLE = "e.g. 2018-08-15T03:00:00Z, 2018-08-15T05:00:00+02:00 or 1534302000000"

def _iso_timestamp(name: str, raw, text: str) -> int:
    """The grammar of values/iso_time.py, with a zone, to the millisecond."""
    m = iso_time.match(text)
    if m is None and iso_time.BASIC_FORMAT.fullmatch(text):
        raise BadOptionError(name, raw, "the ISO-8601 basic format (no - or :) is not read: "
                             f"write the date and time with them, {_ISO_EXAMPLE}")
    if m is None:
        raise BadOptionError(name, raw, f"expected milliseconds since the epoch or an ISO-8601 "
                             f"time with a zone, {_ISO_EXAMPLE}")
    if not iso_time.has_zone(m):
        raise BadOptionError(name, raw, "an ISO-8601 time needs a zone (Z for UTC, or +HH:MM): "
                             f"which one is meant is not known; {_ISO_EXAMPLE}")
    if m["s"] == "60":
        raise BadOptionError(name, raw, "a leap second (:60) has no timestamp of its own in "
                             "Kafka (nor in epoch milliseconds): give :59.999 or the next second")
    if (m["f"] or "")[3:].strip("0"):
        raise BadOptionError(name, raw, "Kafka timestamps are milliseconds: give at most three "
                             "digits after the seconds")
    try:
        when = iso_time.to_datetime(m, digits=3)
    except ValueError as err:     # month 13, 31 April, hour 24, zone +24:00...
        reason = str(err)
        if not reason.startswith("the zone"):
            reason = f"not a time: {reason}"
        raise BadOptionError(name, raw, f"{reason}; {_ISO_EXAMPLE}") from None
    delta = when - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _bound(opts: dict, which: str, default: int, stream: bool = False) -> BoundSpec:
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
        if which == "starting" and not stream:
            raise BadOptionError(offsets_name, raw, "latest is not allowed for the start of a "
                                                    "batch query")
        return BoundSpec(LATEST)
    # Batch queries: a start cannot be "latest" (-1) and an end cannot be "earliest" (-2);
    # a stream may start at either.
    allowed = ((EARLIEST, LATEST) if stream else (EARLIEST,)) if which == "starting" \
        else (LATEST,)
    return BoundSpec(default, offsets=_partition_map(offsets_name, text, allowed))
