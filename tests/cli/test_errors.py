"""Every CLI error is one readable line: what is wrong, naming the file (and byte) or the option,
under 200 characters, and no traceback unless --debug asks for it.

The bad inputs are gathered by kind, for every command they apply to: a missing path, a path that
is no log directory, a torn or corrupt segment, a broken index, bad option values, unknown
options and commands.
"""

from __future__ import annotations

import os
import shutil
import struct

import pytest

from segmentlog_source.cli.main import main
from tests.cli.helpers import run_cli

SEGMENT = "00000000000000000000"
LOG = f"data/events-0/{SEGMENT}.log"
MAX_FIRST_LINE = 200


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A work directory of good and bad inputs; the tests run in it, with relative paths, as a
    person would."""
    root = tmp_path_factory.mktemp("errors")
    result = run_cli("generate", root / "data", "--partitions", "2", "--records", "3000",
                     "--segment-bytes", "30000", "--records-per-batch", "10")
    assert result.returncode == 0, result.stderr

    def damaged(name: str, damage) -> None:
        shutil.copytree(root / "data" / "events-0", root / name / "events-0")
        damage(root / name / "events-0")

    # a closed segment cut short: a torn write in the middle of the log
    damaged("torn", lambda p: os.truncate(p / f"{SEGMENT}.log",
                                          (p / f"{SEGMENT}.log").stat().st_size - 10))

    def bad_magic(p):   # the second batch's magic byte
        data = bytearray((p / f"{SEGMENT}.log").read_bytes())
        second = 12 + struct.unpack_from(">i", data, 8)[0]
        data[second + 16] = 7
        (p / f"{SEGMENT}.log").write_bytes(bytes(data))

    def huge_batch(p):   # the first batch claims 1 GiB
        data = bytearray((p / f"{SEGMENT}.log").read_bytes())
        struct.pack_into(">i", data, 8, 2**30)
        (p / f"{SEGMENT}.log").write_bytes(bytes(data))

    def unsorted_index(p):
        data = bytearray((p / f"{SEGMENT}.index").read_bytes())
        data[8:16], data[16:24] = data[16:24], data[8:16]
        (p / f"{SEGMENT}.index").write_bytes(bytes(data))

    damaged("magic", bad_magic)
    damaged("huge", huge_batch)
    damaged("index", unsorted_index)
    (root / "empty").mkdir()
    (root / "nothing" / "not-a-partition").mkdir(parents=True)
    (root / "file.txt").write_text("hello\n")
    (root / "zeros").mkdir()
    (root / "zeros" / f"{SEGMENT}.log").write_bytes(b"\0" * 100)   # preallocated, unwritten
    return root


# (arguments, what the first line must name) -- paths are relative to `root`
MISSING = [(["dump", "--files", "nope/0.log"], "nope/0.log")] + [
    ([command, "nope"], "nope") for command in ("verify", "reindex", "stats", "explain")]
NOT_A_LOG = [([command, path], path) for command in ("verify", "reindex", "stats", "explain")
             for path in ("file.txt", "empty", "nothing")] + [
    (["generate", "file.txt"], "file.txt"), (["generate", "nothing"], "nothing"),
    (["dump", "--files", f"zeros/{SEGMENT}.log"], f"zeros/{SEGMENT}.log")]
DAMAGED = [
    (["reindex", "torn"], f"torn/events-0/{SEGMENT}.log at byte "),
    (["dump", "--files", f"magic/events-0/{SEGMENT}.log"],
     f"magic/events-0/{SEGMENT}.log at byte "),
    (["stats", "magic"], f"magic/events-0/{SEGMENT}.log at byte "),
    (["reindex", "magic"], f"magic/events-0/{SEGMENT}.log at byte "),
    (["stats", "huge"], f"huge/events-0/{SEGMENT}.log at byte 0"),
    (["explain", "index"], f"index/events-0/{SEGMENT}.index at byte 16"),
    (["dump", "--index-sanity-check", "--files", f"index/events-0/{SEGMENT}.index"],
     f"index/events-0/{SEGMENT}.index at byte 16"),
]
BAD_VALUES = [
    (["dump", "--max-bytes", "0", "--files", LOG], "--max-bytes"),
    (["dump", "--max-message-size", "-1", "--files", LOG], "--max-message-size"),
    (["dump", "--max-bytes", "many", "--files", LOG], "--max-bytes"),
    (["verify", "--index-interval-bytes", "-1", "data"], "--index-interval-bytes"),
    (["reindex", "--index-interval-bytes", "x", "data"], "--index-interval-bytes"),
    (["generate", "new", "--partitions", "0"], "--partitions"),
    (["generate", "new", "--codec", "brotli"], "--codec"),
    (["generate", "new", "--topics", "no spaces"], "--topics"),
    (["generate", "new", "--segment-bytes", "10"], "--segment-bytes"),
    (["explain", "data", "--option", "startingOffsets=nonsense"], "startingOffsets"),
    (["explain", "data", "--option", "endingOffsets=earliest"], "endingOffsets"),
    (["explain", "data", "--option", "maxBytesPerPartition=1"], "maxBytesPerPartition"),
    (["explain", "data", "--option", "failOnDataLoss=maybe"], "failOnDataLoss"),
    (["explain", "data", "--option", "startingTimestamp=noon"], "startingTimestamp"),
    (["explain", "data", "--option", "subscribe=nosuch"], "subscribe"),
    (["explain", "data", "--option", "assign=[0]"], "assign"),
    (["explain", "data", "--option", "subscribePattern=("], "subscribePattern"),
    (["explain", "data", "--option", 'startingOffsets={"events":{"0":99999}}'], "startingOffsets"),
    (["explain", "data", "--option", "novalue"], "--option"),
    (["explain", "data", "--option", "path=elsewhere"], "--option"),
    (["explain", "data", "--where", "ofset > 5"], "--where"),
    (["explain", "data", "--where", "offset > 1 OR offset < 0"], "--where"),
    (["--fs-option", "no-value", "stats", "data"], "--fs-option"),
    (["stats", "data", "--fs-option", "s3.region=x"], "--fs-option"),
]
UNKNOWN = [
    (["dump", "--files", LOG, "--bogus"], "--bogus"),
    (["stats", "data", "--deep-iteration"], "--deep-iteration"),
    (["explain", "data", "--where"], "--where"),
    (["dump"], "--files"),
    (["frobnicate"], "frobnicate"),
]
CASES = MISSING + NOT_A_LOG + DAMAGED + BAD_VALUES + UNKNOWN


def run_in(root, monkeypatch, capsys, args) -> tuple[int, str]:
    monkeypatch.chdir(root)
    try:
        status = main(args)
    except SystemExit as exit_:   # argparse's usage errors
        status = exit_.code
    return status, capsys.readouterr().err


@pytest.mark.parametrize("args,names", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_the_first_line_names_the_file_or_option(root, monkeypatch, capsys, args, names):
    status, err = run_in(root, monkeypatch, capsys, args)
    first = err.split("\n", 1)[0]
    # (reindex goes on with the other partitions, then exits 1 as verify does)
    assert status == (1 if args[0] == "reindex" and names.endswith(" at byte ") else 2), err
    assert first.startswith("segmentlog"), err
    assert names in first, first
    assert len(first) < MAX_FIRST_LINE, f"{len(first)} characters: {first}"
    assert "Traceback" not in err


def test_every_kind_of_input_is_covered():
    """Each command meets a missing path, a non-log, damage (where it reads data) and a bad
    option value."""
    for kind, commands in ((MISSING, {"dump", "verify", "reindex", "stats", "explain"}),
                           (NOT_A_LOG, {"dump", "verify", "reindex", "stats", "explain",
                                        "generate"}),
                           (DAMAGED, {"dump", "reindex", "stats", "explain"}),
                           (BAD_VALUES, {"dump", "verify", "reindex", "generate", "explain"})):
        assert {next(a for a in args if not a.startswith("-") and a not in ("no-value",))
                for args, _ in kind} >= commands


def test_debug_adds_the_traceback_after_the_line(root):
    plain = run_cli("stats", "magic", cwd=root)
    debug = run_cli("stats", "--debug", "magic", cwd=root)
    before = run_cli("--debug", "stats", "magic", cwd=root)
    assert plain.returncode == debug.returncode == before.returncode == 2
    assert "Traceback" not in plain.stderr and len(plain.stderr.splitlines()) == 1
    for result in (debug, before):
        lines = result.stderr.splitlines()
        assert lines[0] == plain.stderr.rstrip("\n")
        assert lines[1] == "Traceback (most recent call last):"
        assert lines[-1].startswith("segmentlog_source.errors.CorruptDataError: ")


def test_a_bug_is_one_line_too(root, monkeypatch, capsys):
    """An exception nobody meant (a bug) still prints one line, pointing at --debug."""
    from segmentlog_source.cli import stats

    def broken(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(stats, "partition_stats", broken)
    status, err = run_in(root, monkeypatch, capsys, ["stats", "data"])
    assert status == 70
    assert err == ("segmentlog: internal error, KeyError: 'oops' (a bug; run again with --debug "
                   "and report the traceback)\n")
    status, err = run_in(root, monkeypatch, capsys, ["stats", "--debug", "data"])
    assert err.splitlines()[1] == "Traceback (most recent call last):"


def test_help_speaks_to_users():
    """No spec sections, module names or source paths in any --help."""
    for command in ("", "dump", "verify", "reindex", "generate", "stats", "explain"):
        result = run_cli(*([command] if command else []), "--help")
        assert result.returncode == 0 and result.stdout.startswith("usage: segmentlog")
        for internal in ("§", ".py", "segmentlog_source", "spec ", "PartitionLog", "EntryScan",
                         "storage/", "format/"):
            assert internal not in result.stdout, (command, internal)
