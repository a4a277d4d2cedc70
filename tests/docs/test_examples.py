"""Every Python and shell example in docs/ runs, against logs `segmentlog generate` writes.

A page's blocks run in order, in one namespace per page, with the session's one SparkSession
as `spark`. The pages name their logs under `/data/` (`/data/kafka-logs`, the log the first-hour
page generates); each page gets its own copy of that log in a temporary directory, which
stands for `/data/` (a page that generates `/data/kafka-logs` itself starts without it).
A `console` block's `$ ` lines run in bash with the project's `segmentlog` on the PATH, and
the lines after a command are its output, compared exactly. A block that must not run says
why in its fence: ```python title="Not run by the tests: <why>"."""

from __future__ import annotations

import os
from pathlib import Path
import re
import shutil
import subprocess
import sys

import pytest

from segmentlog_source.cli.main import main as segmentlog

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.M | re.S)
RUN = {"python", "console"}
NOT_RUN = re.compile(r'^(\w+) title="Not run by the tests: [^"]{8,}"$')
GENERATE = ["generate", "{data}/kafka-logs", "--topics", "orders,clicks", "--partitions", "2",
            "--records", "20000", "--segment-bytes", "200000", "--records-per-batch", "20",
            "--timestamp-jitter-ms", "30", "--codec", "lz4", "--quiet"]


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """(info string, code, line) of each fenced block."""
    text = page.read_text()
    return [(m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in FENCE.finditer(text)]


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("docs-data")
    assert segmentlog([a.format(data=data) for a in GENERATE]) == 0
    return data


def test_every_code_block_runs_or_says_why_not():
    for page in PAGES:
        for info, _code, line in blocks(page):
            lang = info.split(" ")[0]
            if info in RUN or lang in ("", "text"):
                continue
            assert NOT_RUN.match(info), (f"{page.relative_to(ROOT)}:{line}: a ```{info} block "
                                         'neither runs nor says title="Not run by the tests: why"')


def run_console(code: str, data: Path, where: str) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "COLUMNS": "100"}
    steps: list[tuple[str, list[str]]] = []
    for line in code.replace("\\\n", " ").splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"{where}: output before any command"
            steps[-1][1].append(line)
    for command, shown in steps:
        done = subprocess.run(["bash", "-c", command.replace("/data/", f"{data}/")],
                              capture_output=True, text=True, env=env, cwd=data)
        assert done.returncode == 0, f"{where}: `{command}` failed:\n{done.stderr[-2000:]}"
        got = (done.stdout + done.stderr).replace(f"{data}/", "/data/").rstrip("\n")
        if shown:
            assert got == "\n".join(shown).rstrip("\n"), f"{where}: `{command}` printed\n{got}"


@pytest.mark.spark
@pytest.mark.parametrize("page", [p for p in PAGES if any(i in RUN for i, _, _ in blocks(p))],
                         ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_the_examples_of_a_page_run(page, spark, generated, tmp_path):
    data = tmp_path / "data"
    if "$ segmentlog generate /data/kafka-logs " in page.read_text():
        data.mkdir()                  # the page makes the log itself (generate appends to one)
    else:
        shutil.copytree(generated, data)
    namespace = {"__name__": "__docs__", "spark": spark}
    for info, code, line in blocks(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        if info == "python":
            source = code.replace('"/data/', f'"{data}/').replace("'/data/", f"'{data}/")
            exec(compile(source, where, "exec"), namespace)
        elif info == "console":
            run_console(code, data, where)
