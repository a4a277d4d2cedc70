"""Plain text tables for `stats` and `explain`: columns aligned with spaces, numbers on the right,
nothing a terminal or a diff could mangle (no box drawing, no colour)."""

from __future__ import annotations

import datetime as dt

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def render_table(header: list[str], rows: list[list[object]]) -> str:
    """The table as lines; int cells are right-aligned, the rest left-aligned."""
    cells = [[_text(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    numeric = [bool(rows) and all(isinstance(r[i], int) or r[i] is None for r in rows)
               for i in range(len(header))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(header)] + [line(r) for r in cells]) + "\n"


def _text(cell: object) -> str:
    if cell is None:
        return "-"
    if isinstance(cell, int) and not isinstance(cell, bool):
        return f"{cell:,}"
    return str(cell)


def timestamp_text(ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC, '-' for none (None, or Kafka's -1)."""
    if ms is None or ms < 0:
        return "-"
    try:
        moment = _EPOCH + dt.timedelta(milliseconds=ms)
    except OverflowError:   # past year 9999: the number is all there is to show
        return str(ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def share_text(part: int, whole: int) -> str:
    if whole <= 0:
        return "0%"
    share = 100 * part / whole
    if 0 < share < 0.1:
        return "<0.1%"
    return f"{share:.1f}%"
