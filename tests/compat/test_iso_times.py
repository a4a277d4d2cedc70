"""Times written as text read the same on every Python: `datetime.fromisoformat` of Python 3.10
refuses `Z`, `+HHMM` and fractions of other than 3 or 6 digits, which 3.11 reads. Options,
`--where` and JSON values read them with values/iso_time.py's one grammar instead."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from segmentlog_source.cli.where_clause import parse_where
from segmentlog_source.errors import BadOptionError
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import Predicate
from segmentlog_source.values.column_decoders import JsonColumn
from segmentlog_source.values.ddl import parse_schema

MOMENT = dt.datetime(2023, 11, 14, 22, 13, 20, 500_000, tzinfo=dt.timezone.utc)
MICROS = 1_700_000_000_500_000
SPELLINGS = ["2023-11-14T22:13:20.5Z", "2023-11-14 23:13:20.5+0100", "2023-11-14t21:13:20.50-01:00",
             "2023-11-14T22:13:20.500000000Z"]


@pytest.mark.parametrize("text", SPELLINGS)
def test_where_json_and_options_read_each_spelling(text, tmp_path):
    assert parse_where(f"timestamp >= '{text}'").predicates == \
        [Predicate("timestamp", ">=", MICROS)]
    column = JsonColumn(parse_schema("t TIMESTAMP"))
    decoded, _ = column.decode(pa.array([f'{{"t": "{text}"}}'.encode()], pa.binary()))
    assert decoded.array.to_pylist() == [{"t": MOMENT}]
    opts = parse_read_options({"path": str(tmp_path), "startingTimestamp": text})
    assert opts.starting.global_timestamp == MICROS // 1000


@pytest.mark.parametrize("text,reason", [
    ("2023-11-14T22:13:20.1234567Z", "at most 6 digits"),
    ("20231114T221320Z", "not an ISO-8601 date-time"),
    ("2023-11-14T24:00:00Z", "hour must be in 0..23"),
])
def test_what_is_no_time_is_an_error_saying_why(text, reason):
    with pytest.raises(BadOptionError, match=reason):
        parse_where(f"timestamp >= '{text}'")
