"""The house rules: layers only import downwards, no import circles (between sibling modules or
packages, at any depth), and no module grows past 550 lines.

The contracts live in pyproject.toml and are checked by import-linter, the tool also available
as `lint-imports` in the repository. The two tests that break a copy of the package show the
check has teeth: an upward import and a circle between two modules of one package both fail it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "segmentlog_source"
MAX_MODULE_LINES = 550


def _lint_imports(package_parent: Path) -> subprocess.CompletedProcess:
    """import-linter over the `segmentlog_source` found first on `package_parent`."""
    tool = Path(sys.executable).with_name("lint-imports")
    if not tool.exists():
        raise RuntimeError(f"import-linter is not installed beside {sys.executable} "
                           "(make test installs it)")
    env = dict(os.environ, PYTHONPATH=str(package_parent))
    return subprocess.run([str(tool), "--no-cache", str(REPO / "pyproject.toml")],
                          cwd=package_parent, env=env, capture_output=True, text=True,
                          timeout=120)


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package with `line` appended to `module` (a path inside the package)."""
    shutil.copytree(PACKAGE, tmp_path / "segmentlog_source",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "segmentlog_source" / module
    target.write_text(target.read_text() + "\n" + line + "\n")
    return tmp_path


def test_the_contracts_hold():
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_layers(tmp_path):
    # format (bytes) must never reach up into storage (files)
    parent = _copy_with(tmp_path, "format/batch.py", "from ..storage.log import log_segment")
    result = _lint_imports(parent)
    assert result.returncode != 0
    assert "A lower layer never imports a higher one BROKEN" in result.stdout
    assert "segmentlog_source.format.batch -> segmentlog_source.storage.log.log_segment" \
        in result.stdout


def test_a_circle_between_sibling_modules_is_caught(tmp_path):
    # legacy.py imports codecs.py; codecs.py importing legacy.py closes a circle inside format/
    parent = _copy_with(tmp_path, "format/codecs.py", "from . import legacy")
    result = _lint_imports(parent)
    assert result.returncode != 0
    assert "No import circles, between sibling modules or packages at any depth BROKEN" \
        in result.stdout
    assert "segmentlog_source.format" in result.stdout and "- .legacy -> .codecs" in result.stdout


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(
    p.relative_to(PACKAGE)))
def test_no_module_passes_550_lines(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(REPO)} has {lines} lines: split it " \
                                      "where its parts meet"


MAX_LINE = 100


def test_no_line_passes_100_columns():
    long = [f"{p.relative_to(REPO)}:{i}" for folder in ("segmentlog_source", "tests", "bench")
            for p in sorted((REPO / folder).rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if len(line) > MAX_LINE]
    assert long == [], f"lines over {MAX_LINE} columns: {long}"
