"""The `segmentlog` entry point: dispatch, and one line instead of a traceback for bad input."""

from __future__ import annotations

from segmentlog_source.cli.main import main
from tests.cli.helpers import run_cli


def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("dump", "verify", "reindex", "generate", "stats", "explain"):
        assert command in result.stdout


def test_usage_errors_come_from_argparse():
    for args in ([], ["frobnicate"], ["dump"], ["generate", "d", "--codec", "brotli"]):
        result = run_cli(*args)
        assert result.returncode == 2 and "usage: segmentlog" in result.stderr
        assert "Traceback" not in result.stderr


def test_errors_are_one_line_in_process(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err == f"segmentlog: no such file or directory: {tmp_path}/nowhere\n"
    assert main(["dump", "--max-bytes", "0", "--files", "x.log"]) == 2
    assert capsys.readouterr().err == \
        "segmentlog: option --max-bytes=0: must be between 1 and 2147483647\n"


def test_a_log_that_is_not_a_log(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"\x00" * 100)  # a preallocated, never written segment
    result = run_cli("dump", "--files", log)
    assert result.returncode == 2
    assert result.stderr == (f"segmentlog: {log} at byte 0: record size 0 is smaller than the "
                             "minimum record overhead (14) (`segmentlog verify DIR` for a full "
                             "report)\n")
