"""Which option names a read or a write takes, before any value is looked at.

Spark's Kafka source ignores a name it does not know, so a typo there changes rows silently
(`subscrbe=orders` reads every topic). segmentlog knows every name it takes and refuses any
other with the closest known names; the names a ported Kafka job carries that only mean
something to a broker are accepted and named in one warning. `kafka.` options are sorted by
kafka_options.py; `fs.` options are checked by store_options.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import difflib
from typing import Mapping

from ..errors import BadOptionError
from . import kafka_options, option_table

# Spark's generic options: load(path) and load([paths]) arrive as these.
GENERIC = ("path", "paths")

# Every name a read or a write takes is declared once, with its meaning, in option_table.py.
READ = option_table.names(option_table.READ)
WRITE = option_table.names(option_table.WRITE)

# Spark's Kafka source options that steer a consumer or a stream's triggers, never which rows a
# batch read returns (KafkaSourceProvider.scala:574-583; Spark itself ignores the trigger ones
# in a batch query with a warning, :400-411).
BROKER_ONLY_READ = ("kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries",
                    "fetchOffset.retryIntervalMs", "groupIdPrefix", "maxOffsetsPerTrigger",
                    "minOffsetsPerTrigger", "maxTriggerDelay")

# A stream takes a read's options, and the trigger ones take effect there.
TRIGGER = tuple(o.name for o in option_table.OPTIONS if o.kinds == (option_table.STREAM,))
STREAM = READ + TRIGGER
BROKER_ONLY_STREAM = tuple(n for n in BROKER_ONLY_READ if n not in TRIGGER)

_KINDS = {"read": (READ, BROKER_ONLY_READ), "write": (WRITE, ()),
          "stream": (STREAM, BROKER_ONLY_STREAM)}
_OTHER = {"read": "write", "write": "read", "stream": "write"}
_CLIENT_KIND = {"read": "read", "stream": "read", "write": "write"}   # a consumer, a producer


@dataclass(frozen=True)
class Screened:
    """Options whose names passed: lower-case names -> values, with each honoured `kafka.`
    option under segmentlog's name; `ignored`, the names accepted but of no effect."""

    options: dict[str, str]
    ignored: tuple[str, ...] = ()
    given_as: dict[str, str] = field(default_factory=dict)   # mapped name -> the kafka. name

    def renamed(self, err: BadOptionError) -> BadOptionError:
        """`err` naming the option as the user gave it (kafka.isolation.level, not
        isolationLevel), so the user finds it in their code."""
        given = self.given_as.get(err.name.lower())
        if given is None:
            return err
        return BadOptionError(given, err.value, err.reason, err.detail)


def screen(options: Mapping[str, object], kind: str) -> Screened:
    """Check every name of a `kind` ("read", "stream" or "write") and map `kafka.` options; raise a
    BadOptionError for a name segmentlog does not take."""
    own, broker_only = _KINDS[kind]
    own_names = {n.lower() for n in own}
    broker = {n.lower(): n for n in broker_only}
    out: dict[str, str] = {}
    given: dict[str, list[tuple[str, str]]] = {}
    ignored = []
    for raw_name, value in options.items():
        if value is None:
            continue
        name = str(raw_name).lower()
        if name.startswith("fs."):
            out[name] = value
        elif name.startswith(kafka_options.PREFIX):
            what, arg = kafka_options.classify(name[len(kafka_options.PREFIX):],
                                               _CLIENT_KIND[kind])
            if what == "mapped":
                problem = kafka_options.value_problem(name[len(kafka_options.PREFIX):], value)
                if problem is not None:
                    raise BadOptionError(name, value, problem)
                given.setdefault(arg.lower(), []).append((name, value))
            elif what == "ignored":
                ignored.append(name)
            elif what == "refused":
                raise BadOptionError(name, None, f"not supported: {arg}")
            else:
                raise _unknown(name, kind)
        elif name in own_names:
            given.setdefault(name, []).append((_display(name, own), value))
        elif name in broker:
            out[name] = value     # (ignored, but Spark still checks some: options.py)
            ignored.append(broker[name])
        else:
            raise _unknown(name, kind)
    given_as = {}
    for target, sources in given.items():
        # segmentlog's own name first, so that a conflict is reported the same way every time
        # (Spark's options arrive in no particular order)
        sources.sort(key=lambda s: (s[0].startswith(kafka_options.PREFIX), s[0]))
        a, va = sources[0]
        for b, vb in sources[1:]:
            if str(vb).strip().lower() != str(va).strip().lower():
                raise BadOptionError(a, va, f"conflicts with {b}={vb!r}: give one of them")
        out[target] = sources[0][1]
        if sources[0][0].startswith(kafka_options.PREFIX):
            given_as[target] = sources[0][0]
    return Screened(out, tuple(sorted(ignored)), given_as)


def ignored_warning(ignored: tuple[str, ...]) -> str | None:
    """The one warning for options accepted but of no effect, or None."""
    if not ignored:
        return None
    return ("segmentlog: these options only mean something to a Kafka broker or a streaming "
            f"query and are ignored: {', '.join(ignored)}")


def _display(name: str, names: tuple[str, ...]) -> str:
    return next(n for n in names if n.lower() == name)


def _unknown(name: str, kind: str) -> BadOptionError:
    own, broker_only = _KINDS[kind]
    other = _OTHER[kind]
    if name in {n.lower() for n in _KINDS[other][0]} - {n.lower() for n in GENERIC}:
        hint = "select topics with subscribe or assign" if name == "topic" else "remove it"
        return BadOptionError(name, None, f"a {other} option, not a {kind} option: {hint}")
    detail = None
    if name.startswith(kafka_options.PREFIX):
        candidates = kafka_options.known_names(_CLIENT_KIND[kind])
        client = "producer" if kind == "write" else "consumer"
        what = f"not a Kafka {client} setting segmentlog knows, so it may change the data"
    else:
        candidates = [*own, *broker_only]
        what = f"not a segmentlog {kind} option"
        detail = f"{kind} options: {', '.join(own)}, fs.*, kafka.*"
    by_lower = {c.lower(): c for c in candidates}
    close = [by_lower[c] for c in difflib.get_close_matches(name, list(by_lower), n=2,
                                                            cutoff=0.6)]
    advice = (f"did you mean {' or '.join(close)}?" if close
              else "remove it (docs: the options reference)")
    return BadOptionError(name, None, f"{what}; {advice}", detail)
