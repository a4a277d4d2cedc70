"""Progress bars: drawn for a person at a terminal (stdout and stderr on a pseudo-terminal here),
never when output is piped, never with --quiet; and the commands' own lines stay intact."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from segmentlog_source.cli import progress as progress_module
from segmentlog_source.cli.progress import Progress, show_bar
from tests.cli.helpers import SEGMENTLOG, run_cli, writable_copy
from tests.conftest import shared_fixture

BAR = re.compile(r"(dump|verify|reindex|generate|stats): +\d+%\|")
LOG = shared_fixture("kafka-real", "xpxwo100-bullshit", "__consumer_offsets-40",
                     "00000000000000000000.log")


def run_on_terminal(*args, cwd=None) -> tuple[int, str]:
    """Run the console script with stdout and stderr on one 80x24 pseudo-terminal; everything
    it wrote, with the terminal's \\r\\n turned back into \\n."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = subprocess.Popen([str(SEGMENTLOG), *map(str, args)], stdin=subprocess.DEVNULL,
                               stdout=slave, stderr=slave, cwd=cwd)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:   # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert process.wait(timeout=600) is not None
    return process.returncode, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


ANSI_SGR = re.compile(r"\x1b\[[0-9;]*m")


def visible_lines(output: str) -> list[str]:
    """The lines a terminal shows at the end: what follows the last carriage return of each
    line (the bar is drawn after a \\r and cleared with one), colour codes (which show nothing:
    numba resets the terminal's colours at exit where colorama is installed) and empty lines
    dropped."""
    output = ANSI_SGR.sub("", output)
    return [line.rsplit("\r", 1)[-1].rstrip() for line in output.split("\n")
            if line.rsplit("\r", 1)[-1].strip()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("progress") / "data"
    assert run_cli("generate", path, "--partitions", "2", "--records", "20000",
                   "--segment-bytes", "300000").returncode == 0
    return path


def command_in(command: str, data, run_dir) -> list:
    """The arguments of `command` for a run in `run_dir` (the cwd: the commands that write get
    a fresh directory each run, named alike, so that their output is alike)."""
    run_dir.mkdir(parents=True)
    if command == "reindex":
        writable_copy(data, run_dir / "copy")
    return {"dump": ["dump", "--deep-iteration", "--files", LOG],
            "verify": ["verify", data],
            "reindex": ["reindex", "copy"],
            "generate": ["generate", "generated", "--records", "3000"],
            "stats": ["stats", "--deep", data]}[command]


@pytest.mark.parametrize("command", ["dump", "verify", "reindex", "generate", "stats"])
def test_a_bar_on_a_terminal_none_when_quiet_or_piped(command, data, tmp_path):
    args = command_in(command, data, tmp_path / "shown")
    status, shown = run_on_terminal(*args, cwd=tmp_path / "shown")
    assert status == 0, shown
    assert BAR.search(shown), shown[:500]
    assert f"{command}:" in BAR.search(shown).group(0)
    args = command_in(command, data, tmp_path / "quiet")
    status, quiet = run_on_terminal(*args[:1], "--quiet", *args[1:], cwd=tmp_path / "quiet")
    assert status == 0 and not BAR.search(quiet), quiet[:500]
    args = command_in(command, data, tmp_path / "piped")
    piped = run_cli(*args, cwd=tmp_path / "piped")
    assert piped.returncode == 0 and piped.stderr == ""
    # the lines the command prints are the same on a terminal, with or without the bar
    assert visible_lines(shown) == visible_lines(quiet) == piped.stdout.splitlines() != []


def test_quiet_before_the_command_too(data):
    status, output = run_on_terminal("--quiet", "verify", data)
    assert status == 0 and not BAR.search(output)


def test_show_bar_asks_both_streams(monkeypatch):
    class Stream(io.StringIO):
        def __init__(self, tty: bool):
            super().__init__()
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    for out, err, quiet, force, expected in [
            (True, True, False, False, True), (False, True, False, False, False),
            (True, False, False, False, False), (True, True, True, False, False),
            (False, False, False, True, True), (True, True, True, True, False)]:
        monkeypatch.setattr(sys, "stdout", Stream(out))
        monkeypatch.setattr(sys, "stderr", Stream(err))
        assert show_bar(quiet, force) is expected, (out, err, quiet, force)


def test_lines_are_written_whole_around_the_bar(monkeypatch):
    err, out = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    progress = Progress(100, "dump", shown=True)
    stream = progress.around_bar(out)
    stream.write("first ")
    assert out.getvalue() == ""                      # gathered, not yet written
    stream.write("line\nsecond" + "x" * progress_module.FLUSH_CHARS)
    assert out.getvalue() == "first line\n"          # whole lines only: the bar owns the rest
    drawn = err.getvalue()
    assert "dump:" in drawn and drawn.endswith("\r") is False
    progress.update(100)
    progress.close()
    assert out.getvalue() == "first line\nsecond" + "x" * progress_module.FLUSH_CHARS
    assert progress.around_bar(out) is not out


def test_no_bar_means_the_streams_themselves(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    progress = Progress(10, "verify", shown=False)
    out = io.StringIO()
    assert progress.around_bar(out) is out
    progress.update(10)
    progress.close()
    assert sys.stderr.getvalue() == ""
