"""The options of `spark.readStream.format("segmentlog")`: a batch read's, with Spark's Kafka
source's stream rules (KafkaSourceProvider.scala): the start defaults to `latest`, there is no
end, and the trigger options (`maxOffsetsPerTrigger`, `minOffsetsPerTrigger`,
`maxTriggerDelay`) take effect instead of being ignored."""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Mapping

from ..errors import BadOptionError
from .option_names import screen
from .option_values import int_option
from .options import ReadOptions, parse_fields

ENDING = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.I)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
            "d": 86_400_000}


@dataclass(frozen=True)
class StreamOptions:
    read: ReadOptions                       # selection, start, isolation, columns, checks
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000  # Spark's default, "15m"


def parse_stream_options(options: Mapping[str, str]) -> StreamOptions:
    screened = screen(options, "stream")
    opts = screened.options
    for name in ENDING:
        if opts.get(name.lower()) is not None:
            raise BadOptionError(name, None, "not valid in a streaming query: a stream has no "
                                 "end (Spark's Kafka source refuses it too); remove it")
    try:
        read = parse_fields(screened, stream=True)
        return StreamOptions(
            read,
            max_offsets_per_trigger=int_option(opts, "maxOffsetsPerTrigger", None),
            min_offsets_per_trigger=int_option(opts, "minOffsetsPerTrigger", None),
            max_trigger_delay_ms=_duration_ms(opts, "maxTriggerDelay", 15 * 60_000))
    except BadOptionError as err:
        raise screened.renamed(err) from None


def _duration_ms(opts: dict, name: str, default: int) -> int:
    """A duration as Spark writes them ("15m", "30s", "500ms"; a bare number is ms)."""
    raw = opts.get(name.lower())
    if raw is None:
        return default
    match = _DURATION.match(str(raw))
    if match is None:
        raise BadOptionError(name, raw, "expected a duration such as 15m, 30s or 500ms")
    return int(match.group(1)) * _UNIT_MS[(match.group(2) or "ms").lower()]
