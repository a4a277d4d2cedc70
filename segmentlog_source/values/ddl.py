"""Spark DDL type strings (`a INT, b ARRAY<STRUCT<x: STRING>>`) as pyspark types, without a JVM.

The planner process where options are parsed has no SparkContext, so Spark's own parser
(`StructType.fromDDL`) is out of reach; this covers the type grammar users write for
`valueSchema`/`keySchema`: the primitive names Spark accepts (case-insensitive, with their
aliases), decimal(p, s), array<>, map<,>, struct<> (with `:` or a space before a field's type),
backquoted names and NOT NULL. Spark's JSON form of a schema (`{"type": "struct", ...}`) is
accepted too.
"""

from __future__ import annotations

import json
import re

from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType,
                               DateType, DecimalType, DoubleType, FloatType, IntegerType,
                               LongType, MapType, ShortType, StringType, StructField,
                               StructType, TimestampNTZType, TimestampType)

PRIMITIVES = {
    "boolean": BooleanType, "tinyint": ByteType, "byte": ByteType, "smallint": ShortType,
    "short": ShortType, "int": IntegerType, "integer": IntegerType, "bigint": LongType,
    "long": LongType, "float": FloatType, "real": FloatType, "double": DoubleType,
    "string": StringType, "varchar": StringType, "char": StringType, "binary": BinaryType,
    "date": DateType, "timestamp": TimestampType, "timestamp_ltz": TimestampType,
    "timestamp_ntz": TimestampNTZType,
}
_TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|[A-Za-z_][A-Za-z0-9_]*|\d+|[<>(),:])")


class DDLError(ValueError):
    """A DDL string this parser cannot read; the message says where."""


def parse_schema(text: str) -> StructType:
    """A StructType from a DDL column list or Spark's JSON schema form."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            return StructType.fromJson(json.loads(stripped))
        except (ValueError, KeyError, TypeError) as err:
            raise DDLError(f"not a Spark JSON schema: {err}") from None
    parser = _Parser(stripped)
    if stripped.lower().startswith("struct<"):
        result = parser.type()
    else:
        result = StructType(parser.fields(end=None))
    parser.done()
    return result


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                if text[pos:].strip() == "":
                    break
                raise DDLError(f"unexpected character {text[pos]!r} at position {pos}")
            self.tokens.append((m.group(1), m.start(1)))
            pos = m.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        if self.i >= len(self.tokens):
            raise DDLError(f"the type ends early{f', expected {expected!r}' if expected else ''}")
        token, pos = self.tokens[self.i]
        if expected is not None and token.lower() != expected:
            raise DDLError(f"expected {expected!r} at position {pos}, found {token!r}")
        self.i += 1
        return token

    def done(self) -> None:
        if self.i < len(self.tokens):
            token, pos = self.tokens[self.i]
            raise DDLError(f"unexpected {token!r} at position {pos}")

    def name(self) -> str:
        token = self.take()
        if token.startswith("`"):
            return token[1:-1].replace("``", "`")
        if not re.match(r"^[A-Za-z_0-9]+$", token):
            raise DDLError(f"expected a field name, found {token!r}")
        return token

    def fields(self, end: str | None) -> list[StructField]:
        out = []
        while self.peek() is not None and self.peek() != end:
            name = self.name()
            if self.peek() == ":":
                self.take(":")
            dtype = self.type()
            nullable = True
            if self.peek() is not None and self.peek().lower() == "not":
                self.take(), self.take("null")
                nullable = False
            out.append(StructField(name, dtype, nullable))
            if self.peek() == ",":
                self.take(",")
            elif self.peek() is not None and self.peek() != end:
                token, pos = self.tokens[self.i]
                raise DDLError(f"expected ',' at position {pos}, found {token!r}")
        if not out:
            raise DDLError("no fields")
        return out

    def type(self) -> DataType:
        word = self.take().lower()
        if word in PRIMITIVES:
            if word in ("varchar", "char") and self.peek() == "(":
                self.take("("), self.take(), self.take(")")
            return PRIMITIVES[word]()
        if word in ("decimal", "dec", "numeric"):
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = int(self.take())
                if self.peek() == ",":
                    self.take(",")
                    scale = int(self.take())
                self.take(")")
            if not (1 <= precision <= 38 and 0 <= scale <= precision):
                raise DDLError(f"decimal({precision}, {scale}): precision 1..38, scale "
                               f"0..precision")
            return DecimalType(precision, scale)
        if word == "array":
            self.take("<")
            element = self.type()
            self.take(">")
            return ArrayType(element, True)
        if word == "map":
            self.take("<")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(">")
            return MapType(key, value, True)
        if word == "struct":
            self.take("<")
            fields = self.fields(end=">")
            self.take(">")
            return StructType(fields)
        raise DDLError(f"unknown type {word!r}")
