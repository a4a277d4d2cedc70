"""Files that are not files (issue #16, class 7): a FIFO, a socket, a directory or a dangling
symlink named like a segment, an index or a checkpoint, and checkpoints that are not text.
Each tool gives a clear error naming it, in bounded time; nothing blocks, nothing is silently
ignored."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
import shutil
import socket

import pytest

from tests.damage.helpers import dump_all, generated, read, verify_errors

SEGMENT_FILES = ["00000000000000000090.log", "00000000000000000090.index",
                 "00000000000000000090.timeindex", "00000000000000000540.log",
                 "00000000000000000540.index", "00000000000000000600.snapshot"]
TEXT_FILES = ["leader-epoch-checkpoint", "partition.metadata"]
DATA_DIR_FILES = ["log-start-offset-checkpoint", "cleaner-offset-checkpoint",
                  "recovery-point-offset-checkpoint"]
KINDS = ["fifo", "directory", "dangling-symlink", "socket"]
LIMIT_S = 60


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = generated(tmp_path_factory.mktemp("notfiles") / "data")
    (path.parent / "log-start-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    return path, read(path)


def _replace(path: Path, kind: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "dangling-symlink":
        path.symlink_to(path.parent / "no-such-file")
    else:   # bound by a relative name: a socket's path must stay under 108 bytes
        here = os.getcwd()
        os.chdir(path.parent)
        try:
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(path.name)
            sock.close()
        finally:
            os.chdir(here)


def _outcomes(log: Path, queue) -> None:
    """Run in a child process, so a read that blocks can be killed: what each tool did."""
    result = {}
    try:
        result["rows"] = read(log)
    except Exception as exc:   # noqa: BLE001 - the test judges what it was
        result["read"] = f"{type(exc).__name__}: {exc}"
    try:
        result["verify"] = verify_errors(log)
    except Exception as exc:   # noqa: BLE001
        result["verify-raised"] = f"{type(exc).__name__}: {exc}"
    result["dump"] = dump_all(log)
    queue.put(result)


def _run(log: Path) -> dict:
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_outcomes, args=(log, queue))
    child.start()
    try:
        return queue.get(timeout=LIMIT_S)
    finally:
        child.kill()
        child.join()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", SEGMENT_FILES + TEXT_FILES + DATA_DIR_FILES)
def test_not_a_file(healthy, tmp_path, name, kind):
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    log = tmp_path / "data" / "t-0"
    target = (log.parent if name in DATA_DIR_FILES else log) / name
    _replace(target, kind)
    out = _run(log)       # (a hang fails here, with queue.Empty after LIMIT_S)
    read_ok = out.get("rows") == healthy[1]
    if not read_ok:
        assert str(target) in out.get("read", ""), out
        assert out["read"].split(":")[0] in ("CorruptDataError", "LogNotFoundError",
                                            "DataLossError"), out
    assert "verify-raised" not in out, out
    if name in TEXT_FILES or name.endswith((".log", ".index", ".timeindex", ".snapshot")):
        assert any(str(target) in e for e in out["verify"]), out["verify"]
    assert "Traceback" not in out["dump"]


@pytest.mark.parametrize("name", TEXT_FILES + DATA_DIR_FILES)
@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"0\n1\n\xc3(\n", b"\x80"])
def test_a_checkpoint_that_is_not_text_blames_the_file(healthy, tmp_path, name, content):
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    log = tmp_path / "data" / "t-0"
    target = (log.parent if name in DATA_DIR_FILES else log) / name
    target.write_bytes(content)
    out = _run(log)
    if out.get("rows") != healthy[1]:
        assert str(target) in out["read"] and "UTF-8" in out["read"], out
    assert "verify-raised" not in out, out
    if name in TEXT_FILES:
        assert any(str(target) in e for e in out["verify"]), out["verify"]
