"""`explain --where`: SQL conditions parsed without Spark into the reader's predicates, and a
clear error naming --where for everything else."""

from __future__ import annotations

import datetime as dt

import pytest

from segmentlog_source.cli.where_clause import parse_where
from segmentlog_source.errors import BadOptionError
from segmentlog_source.plan.predicates import Predicate


def micros(text: str) -> int:
    moment = dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


@pytest.mark.parametrize("sql,predicates", [
    ("offset >= 100 AND partition = 0",
     [Predicate("offset", ">=", 100), Predicate("partition", "=", 0)]),
    ("OFFSET<5L and `partition` <=> 2",
     [Predicate("offset", "<", 5), Predicate("partition", "=", 2)]),
    ("100 < offset", [Predicate("offset", ">", 100)]),
    ("(offset > 1 AND (offset <= 9)) AND topic IN ('a', 'it''s')",
     [Predicate("offset", ">", 1), Predicate("offset", "<=", 9),
      Predicate("topic", "in", ("a", "it's"))]),
    ("offset BETWEEN 10 AND 20", [Predicate("offset", ">=", 10), Predicate("offset", "<=", 20)]),
    ("partition IN (0, 2) AND topic == 'orders'",
     [Predicate("partition", "in", (0, 2)), Predicate("topic", "=", "orders")]),
    ("timestamp >= TIMESTAMP '2023-11-14 22:13:20'",
     [Predicate("timestamp", ">=", micros("2023-11-14T22:13:20"))]),
    ("timestamp < '2023-11-14T23:13:20.25+01:00'",
     [Predicate("timestamp", "<", micros("2023-11-14T22:13:20.250"))]),
    ("TIMESTAMP '2023-11-14' <= timestamp", [Predicate("timestamp", ">=", micros("2023-11-14"))]),
])
def test_comparisons_become_predicates(sql, predicates):
    clause = parse_where(sql)
    assert clause.predicates == predicates and clause.kept_by_spark == []


@pytest.mark.parametrize("sql,kept", [
    ("offset != 3", ["offset != 3"]),
    ("offset <> 3 AND partition NOT IN (1, 2)", ["offset <> 3", "partition NOT IN (1, 2)"]),
    ("key = 'k1' AND value = 'x'", ["key = 'k1'", "value = 'x'"]),
    ("timestamp IN ('2023-11-14')", ["timestamp IN ('2023-11-14')"]),
    ("timestampType = 0", ["timestampType = 0"]),
])
def test_what_spark_keeps_is_reported_not_planned(sql, kept):
    clause = parse_where(f"offset >= 1 AND {sql}")
    assert clause.predicates == [Predicate("offset", ">=", 1)]
    assert clause.kept_by_spark == kept


@pytest.mark.parametrize("sql,reason", [
    ("offset > 1 OR offset < 0", "unexpected 'OR' at character 12; only AND joins"),
    ("(offset > 1 OR partition = 2)", "unexpected 'OR' at character 13"),
    ("ofset > 1", "unknown column 'ofset' at character 1 "),
    ("ofset > 1", "did you mean offset?"),
    ("NOT offset > 1", "NOT at character 1 is not supported"),
    ("upper(topic) = 'A'", "upper(...) at character 1: functions are not supported"),
    ("offset > partition", "found 'partition' (a column is compared with a value"),
    ("timestamp > 1700000000000", "compare timestamp with TIMESTAMP '2023-11-14 22:13:20'"),
    ("timestamp > 'yesterday'", "'yesterday' is not a date-time"),
    ("timestamp > TIMESTAMP 5", "TIMESTAMP needs a quoted value"),
    ("offset = 'x'", "offset = 'x': offset is compared with an integer"),
    ("topic = 1", "topic = 1: topic is compared with a quoted topic name"),
    ("offset > 1.5", "cannot read '1.5' at character 10"),
    ("offset ~ 1", "cannot read '~ 1' at character 8"),
    ("offset >", "ends where a value was expected"),
    ("(offset > 1", "ends where ')' was expected"),
    ("offset IN 5", "IN needs a list"),
    ("offset BETWEEN 1 OR 2", "BETWEEN needs AND"),
    ("  ", "empty; e.g."),
])
def test_everything_else_is_a_clear_error(sql, reason):
    with pytest.raises(BadOptionError) as caught:
        parse_where(sql)
    assert caught.value.name == "--where" and reason in caught.value.reason, caught.value.reason
    assert str(caught.value).startswith(f"option --where={sql!r}: ")
