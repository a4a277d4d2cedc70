"""Bytes as Java's `new String(bytes, StandardCharsets.UTF_8)` reads them, character for
character: what Kafka's tools print for keys, values and the strings of its own records.

Java replaces what Python's "replace" handler does, one U+FFFD per malformed piece, except for
an encoded surrogate (ED A0..BF): Java reads ED and the next byte, and a continuation byte after
them, as one piece, where Python replaces each byte.
"""

from __future__ import annotations

import codecs

ERROR_HANDLER = "segmentlog.java-replace"


def _java_replace(err: UnicodeDecodeError) -> tuple[str, int]:
    data, start = err.object, err.start
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        if start + 2 < len(data) and data[start + 2] & 0xC0 == 0x80:
            return "\ufffd", start + 3
        return "\ufffd", start + 2
    return "\ufffd", err.end


codecs.register_error(ERROR_HANDLER, _java_replace)


def java_utf8(data) -> str:
    """`new String(data, StandardCharsets.UTF_8)`."""
    return bytes(data).decode("utf-8", ERROR_HANDLER)
