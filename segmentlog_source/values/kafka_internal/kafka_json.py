"""JSON as Kafka's generated JSON converters build it and Jackson prints it (ObjectNode.toString):

    int8..int64, uint16   numbers          bool     true / false
    float64               Java's Double.toString (1.0E7, 0.001)
    string, uuid          JSON strings; only quotes, backslashes and control characters escaped
    bytes                 standard base64 with padding, as a string
    null                  null
    struct                {"field":value,...} in declaration order: a field its version lacks
                          is left out, so is a tagged field equal to its default

No spaces anywhere.
"""

from __future__ import annotations

import base64
from decimal import Decimal

from ...format.message_protocol import (BOOL, BYTES, FLOAT64, STRING, UUID, Array, Struct,
                                        StructValue, default_of)


def struct_json(st: Struct, value: StructValue, version: int,
                overrides: dict[str, str] | None = None) -> str:
    """The struct as JSON; `overrides` gives some fields' JSON text instead."""
    parts = []
    for f in st.fields:
        if version not in f.versions:
            continue
        v = value[f.name]
        if version in f.tagged and v == default_of(f):
            continue
        text = overrides.get(f.name) if overrides else None
        parts.append(f'"{f.name}":{text or value_json(f.type, v, version)}')
    return "{" + ",".join(parts) + "}"


def value_json(type_, v, version: int) -> str:
    if v is None:
        return "null"
    if isinstance(type_, Struct):
        return struct_json(type_, v, version)
    if isinstance(type_, Array):
        return "[" + ",".join(value_json(type_.element, x, version) for x in v) + "]"
    if type_ in (STRING, UUID):
        return jackson_string(v)
    if type_ == BYTES:
        return '"' + base64.b64encode(v).decode("ascii") + '"'
    if type_ == BOOL:
        return "true" if v else "false"
    if type_ == FLOAT64:
        return java_double(v)
    return str(v)


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}
_ESCAPES.update({chr(c): f"\\u{c:04X}" for c in range(0x20) if chr(c) not in _ESCAPES})
_NEEDS_ESCAPE = str.maketrans(_ESCAPES)


def jackson_string(s: str) -> str:
    """A JSON string as Jackson writes it: only quotes, backslashes and control characters
    escaped, \\uXXXX in upper case hex; everything else as is."""
    return '"' + s.translate(_NEEDS_ESCAPE) + '"'


def java_double(d: float) -> str:
    """Java's Double.toString (shortest digits, as Python's repr): plain notation for
    1e-3 <= |d| < 1e7, else computerized scientific notation (1.0E7)."""
    if d != d:
        return "NaN"
    if d in (float("inf"), float("-inf")):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if str(d).startswith("-") else "0.0"
    sign, digits, exponent = Decimal(repr(d)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + exponent      # the decimal point's place in `text`
    head = "-" if sign else ""
    if 1e-3 <= abs(d) < 1e7:
        if point <= 0:
            return f"{head}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{head}{whole}.{frac or '0'}"
    return f"{head}{text[0]}.{text[1:] or '0'}E{point - 1}"
