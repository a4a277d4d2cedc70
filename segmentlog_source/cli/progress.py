"""The one progress bar of the long commands (dump, verify, reindex, generate, stats).

A bar is drawn on stderr only for a person at a terminal: when both stdout and stderr are
terminals and --quiet was not given (`force` draws it anyway, for `generate --progress`).
Output piped to a file or another program is never mixed with bar updates.

While a bar is drawn, the command's own lines go through `Progress.around_bar(stream)`, which
clears the bar, writes them and draws the bar again below them. Lines are gathered and written
a few times a second rather than one by one: redrawing the bar costs a terminal write.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm

FLUSH_SECONDS = 0.1
FLUSH_CHARS = 64 * 1024


def show_bar(quiet: bool = False, force: bool = False) -> bool:
    """Whether the long commands draw a bar (as the module docstring says)."""
    return not quiet and (force or all(_isatty(s) for s in (sys.stdout, sys.stderr)))


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):   # replaced or closed streams
        return False


class Progress:
    """A bar over `total` units (bytes by default), drawn if `shown` (see show_bar); when it is
    not, every method does nothing (so a command may skip computing `total`)."""

    def __init__(self, total: int, what: str, *, shown: bool, unit: str = "B"):
        self.shown = shown
        self._bar = tqdm(total=total, desc=what, unit=unit, unit_scale=True,
                         unit_divisor=1024 if unit == "B" else 1000, disable=not self.shown,
                         file=sys.stderr, leave=False, dynamic_ncols=True)
        self._streams: list[_AroundBar] = []

    def update(self, n: int) -> None:
        if self.shown and n:
            self._bar.update(n)

    def around_bar(self, stream: TextIO) -> TextIO:
        """`stream`, or while the bar is shown, a stream that writes around it."""
        if not self.shown:
            return stream
        wrapped = _AroundBar(stream, self._bar)
        self._streams.append(wrapped)
        return wrapped

    def close(self) -> None:
        self._bar.close()   # (cleared: leave=False)
        for stream in self._streams:
            stream.flush(everything=True)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _AroundBar:
    """Text for a terminal that also shows a bar: gathered, then written with the bar cleared."""

    def __init__(self, stream: TextIO, bar: tqdm):
        self._stream, self._bar = stream, bar
        self._pending: list[str] = []
        self._chars = 0
        self._last = time.monotonic()

    def write(self, text: str) -> int:
        self._pending.append(text)
        self._chars += len(text)
        if self._chars >= FLUSH_CHARS or time.monotonic() - self._last >= FLUSH_SECONDS:
            self.flush()
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self, *, everything: bool = False) -> None:
        """Write the whole lines gathered so far (with `everything`, a partial one too: the
        bar, drawn from the start of the line, would overwrite it)."""
        self._last = time.monotonic()
        text = "".join(self._pending)
        cut = len(text) if everything else text.rfind("\n") + 1
        self._pending = [text[cut:]] if cut < len(text) else []
        self._chars = len(text) - cut
        if cut:
            self._bar.clear()
            self._stream.write(text[:cut])
            self._stream.flush()
            self._bar.refresh()
        else:
            self._stream.flush()

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name):   # encoding, errors, fileno...: the stream's own
        return getattr(self._stream, name)
