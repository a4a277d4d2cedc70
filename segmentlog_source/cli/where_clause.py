"""`explain --where`: a SQL WHERE clause, parsed without Spark, into the reader's predicates.

Understood: comparisons joined by AND (parentheses allowed), each one of
    column = | == | <=> | < | <= | > | >= | != | <> literal    (or literal op column)
    column [NOT] IN (literal, ...)
    column BETWEEN literal AND literal
on the columns of the reader's schema. Literals: integers (5, -1, 5L), 'strings' ('' is a
quote), and for `timestamp` TIMESTAMP '2023-11-14 22:13:20[.123][+01:00]' or a quoted date-time
(UTC unless it names its offset, as with spark.sql.session.timeZone=UTC). Anything else (OR,
NOT before a comparison, functions, arithmetic) is refused with a message saying so.

Comparisons the reader can apply exactly (on offset, timestamp, partition and topic: those
Spark hands to a pushdown reader) become plan.predicates.Predicate; the rest are returned as
text, kept by Spark: they filter rows but cannot spare a byte.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from typing import NamedTuple

from ..errors import BadOptionError
from ..plan.predicates import OPERATORS, Predicate, accepts
from ..values import iso_time

OPTION = "--where"
PUSHABLE = ("offset", "timestamp", "partition", "topic")
SCHEMA = PUSHABLE + ("key", "value", "timestampType", "headers")
_KNOWN = {c.lower(): c for c in SCHEMA}
_OPERATORS = {"=": "=", "==": "=", "<=>": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
              "!=": "!=", "<>": "!="}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
_TOKEN = re.compile(r"""\s*(?:
    (?P<string>'(?:[^']|'')*')
  | (?P<number>-?\d+)[lL]?(?![\w.])
  | (?P<quoted>`[^`]+`)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><=>|<=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),])
)""", re.VERBOSE)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class Token(NamedTuple):
    kind: str
    text: str
    at: int   # character position in the clause


class WhereClause(NamedTuple):
    predicates: list[Predicate]   # what a pushdown read plans with
    kept_by_spark: list[str]      # comparisons that filter rows but spare no bytes


def parse_where(text: str) -> WhereClause:
    parser = _Parser(text)
    clause = WhereClause([], [])
    parser.conjunction(clause)
    if parser.peek() is not None:
        parser.unexpected(parser.peek())
    return clause


def _tokens(text: str) -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            if text[pos:].strip() == "":
                break
            rest = text[pos:].lstrip()
            at = len(text) - len(rest)
            raise BadOptionError(OPTION, text, f"cannot read {rest[:12]!r} at character "
                                 f"{at + 1}")
        kind = match.lastgroup
        tokens.append(Token(kind, match.group(kind), match.start(kind)))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0
        if not self.tokens:
            self.fail("empty; e.g. --where \"offset >= 100 AND partition = 0\"")

    def fail(self, reason: str):
        raise BadOptionError(OPTION, self.text, reason)

    def unexpected(self, token: Token):
        self.fail(f"unexpected {token.text!r} at character {token.at + 1}" + (
            "; only AND joins comparisons (for OR, run one explain per side)"
            if token.text.upper() == "OR" else ""))

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def next(self, what: str) -> Token:
        token = self.peek()
        if token is None:
            self.fail(f"ends where {what} was expected")
        self.i += 1
        return token

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "word" and token.text.upper() == word:
            self.i += 1
            return True
        return False

    def conjunction(self, clause: WhereClause) -> None:
        self.comparison(clause)
        while self.keyword("AND"):
            self.comparison(clause)

    def comparison(self, clause: WhereClause) -> None:
        token = self.peek()
        if token is not None and token.text == "(":
            self.i += 1
            self.conjunction(clause)
            token = self.next("')'")
            if token.text != ")":
                self.unexpected(token)
            return
        if token is not None and token.kind == "word" and token.text.upper() == "NOT":
            self.fail(f"NOT at character {token.at + 1} is not supported; write the opposite "
                      "comparison (offset < 5 for NOT offset >= 5)")
        start = self.i
        following = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
        if token is not None and token.kind == "word" and following is not None \
                and following.text == "(":
            self.fail(f"{token.text}(...) at character {token.at + 1}: functions are not "
                      "supported, only comparisons of a column with values")
        if self._column_ahead():
            column = self._column(self.next("a column"))
            self._after_column(clause, column, start)
        else:
            value = self.literal()
            op = self.next("a comparison operator")
            if op.kind != "op":
                self.fail(f"expected a comparison at character {op.at + 1}, found {op.text!r}")
            column = self._column(self.next("a column"))
            self._add(clause, column, _FLIPPED[_OPERATORS[op.text]], value, start)

    def _after_column(self, clause: WhereClause, column: str, start: int) -> None:
        token = self.next("a comparison")
        negated = token.kind == "word" and token.text.upper() == "NOT"
        if negated:
            token = self.next("IN")
        word = token.text.upper() if token.kind == "word" else None
        if word == "IN":
            values = self._list()
            self._add(clause, column, "not in" if negated else "in", tuple(values), start)
        elif word == "BETWEEN" and not negated:
            low = self.literal()
            if not self.keyword("AND"):
                self.fail("BETWEEN needs AND: offset BETWEEN 10 AND 20")
            high = self.literal()
            self._add(clause, column, ">=", low, start)
            self._add(clause, column, "<=", high, start)
        elif token.kind == "op" and not negated:
            self._add(clause, column, _OPERATORS[token.text], self.literal(), start)
        else:
            self.fail(f"expected a comparison after {column} at character {token.at + 1}, "
                      f"found {token.text!r}")

    def _list(self) -> list:
        if self.next("'('").text != "(":
            self.fail("IN needs a list: partition IN (0, 1)")
        values = [self.literal()]
        while True:
            token = self.next("')'")
            if token.text == ")":
                return values
            if token.text != ",":
                self.fail(f"expected ',' or ')' at character {token.at + 1}")
            values.append(self.literal())

    def literal(self) -> object:
        token = self.next("a value")
        following = self.peek()
        if token.kind == "number":
            return int(token.text)
        if token.kind == "string":
            return token.text[1:-1].replace("''", "'")
        if token.kind == "word" and token.text.upper() == "TIMESTAMP" \
                and following is not None and following.kind == "string":
            self.i += 1
            return _Timestamp(following.text[1:-1].replace("''", "'"))
        if token.kind == "word" and token.text.upper() == "TIMESTAMP" \
                and following is not None and following.kind == "number":
            self.fail("TIMESTAMP needs a quoted value: TIMESTAMP '2023-11-14 22:13:20'")
        self.fail(f"expected a value at character {token.at + 1}, found {token.text!r}"
                  + (" (a column is compared with a value, not with another column)"
                     if token.kind == "quoted" or token.text.lower() in _KNOWN else ""))

    def _column_ahead(self) -> bool:
        token = self.peek()
        if token is None or token.kind not in ("word", "quoted"):
            return False
        if token.kind == "quoted":
            return True
        following = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
        if token.text.upper() == "TIMESTAMP" and following is not None \
                and following.kind == "string":
            return False   # a TIMESTAMP '...' literal, not the column
        return token.text.upper() not in ("NOT", "AND", "OR")

    def _column(self, token: Token) -> str:
        name = token.text.strip("`")
        if token.kind not in ("word", "quoted") or name.lower() not in _KNOWN:
            close = difflib.get_close_matches(name.lower(), _KNOWN, n=1)
            hint = f"; did you mean {_KNOWN[close[0]]}?" if close else ""
            self.fail(f"unknown column {name!r} at character {token.at + 1} (the columns are "
                      f"{', '.join(SCHEMA)}){hint}")
        return _KNOWN[name.lower()]

    def _add(self, clause: WhereClause, column: str, op: str, value, start: int) -> None:
        source = self._source(start)
        values = value if isinstance(value, tuple) else (value,)
        if column == "timestamp":
            values = tuple(self._micros(v, source) for v in values)
        elif column in PUSHABLE:
            wanted = str if column == "topic" else int
            for v in values:
                if not isinstance(v, wanted) or isinstance(v, _Timestamp):
                    kind = "a quoted topic name" if wanted is str else "an integer"
                    self.fail(f"{source}: {column} is compared with {kind}")
        predicate = Predicate(column, op, values if op in ("in", "not in") else values[0])
        if column in PUSHABLE and op in OPERATORS and accepts(predicate):
            clause.predicates.append(predicate)
        else:
            clause.kept_by_spark.append(source)

    def _source(self, start: int) -> str:
        first, last = self.tokens[start], self.tokens[self.i - 1]
        return self.text[first.at:last.at + len(last.text)]

    def _micros(self, value, source: str) -> int:
        if isinstance(value, int):
            self.fail(f"{source}: compare timestamp with TIMESTAMP '2023-11-14 22:13:20' "
                      "(UTC), not a number")
        text = str(value).strip()
        try:
            moment = iso_time.parse(text)
        except ValueError as err:
            self.fail(f"{source}: {text!r} is not a date-time ({err}); e.g. "
                      "'2023-11-14 22:13:20' or '2023-11-14T22:13:20.5+01:00'")
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.timezone.utc)
        delta = moment - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class _Timestamp(str):
    """A TIMESTAMP '...' literal (a string literal compared with `timestamp` reads the same)."""
