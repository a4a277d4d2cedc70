"""ISO-8601 date-times read by one grammar on every Python.

`datetime.fromisoformat` reads more on Python 3.11 than on 3.10 (3.10 takes no `Z`, no `+HHMM`
and only 3 or 6 fraction digits) and drops digits past the microsecond, so a value it reads
would depend on the interpreter. Options (plan/options.py), `--where` (cli/where_clause.py) and
JSON values (json_values.py) read times with this grammar instead: the extended format, date
`YYYY-MM-DD`, optionally followed by `T`, `t` or a space and `HH:MM`, `HH:MM:SS` or
`HH:MM:SS.fraction`, then optionally the zone: `Z`/`z`, `+HH:MM` or `+HHMM` (or `-`). The basic
format (`20180815T030000Z`) is not read.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

ISO_TIME = re.compile(
    r"(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[Tt ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d+))?)?"
    r"(?:(?P<z>[Zz])|(?P<sign>[+-])(?P<oh>\d{2}):?(?P<om>\d{2}))?)?", re.ASCII)
BASIC_FORMAT = re.compile(r"\d{8}[Tt]\d.*", re.ASCII)


def match(text: str) -> re.Match | None:
    """The grammar's groups (y, mo, d, h, mi, s, f, z, sign, oh, om), or None."""
    return ISO_TIME.fullmatch(text)


def has_zone(m: re.Match) -> bool:
    return m["z"] is not None or m["sign"] is not None


def to_datetime(m: re.Match, digits: int = 6) -> datetime:
    """The time a match names: aware (fixed offset) when it has a zone, naive otherwise.
    ValueError for what is no time (month 13, hour 24, a zone past +23:59, a leap second) or
    for a fraction with non-zero digits past `digits` (its unit: 3 = milliseconds)."""
    if m["s"] == "60":
        raise ValueError("a leap second (:60) has no timestamp of its own")
    fraction = m["f"] or ""
    if fraction[digits:].strip("0"):
        raise ValueError(f"at most {digits} digits after the seconds")
    zone = None
    if m["z"] is not None:
        zone = timezone.utc
    elif m["sign"] is not None:
        hours, minutes = int(m["oh"]), int(m["om"])
        if hours > 23 or minutes > 59:
            raise ValueError(f"the zone {m['sign']}{m['oh']}:{m['om']} is not an offset "
                             "(at most +23:59)")
        offset = timedelta(hours=hours, minutes=minutes)
        zone = timezone(-offset if m["sign"] == "-" else offset)
    micros = int((fraction + "000000")[:6])
    return datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"] or 0), int(m["mi"] or 0),
                    int(m["s"] or 0), micros, tzinfo=zone)


def parse(text: str, digits: int = 6) -> datetime:
    """`to_datetime` of the text; ValueError naming what is wrong."""
    m = match(text)
    if m is None:
        raise ValueError("not an ISO-8601 date-time (YYYY-MM-DD, then optionally "
                         "THH:MM[:SS[.fraction]] and Z or +HH:MM)")
    return to_datetime(m, digits)
