"""The manual builds with `mkdocs build --strict` (no warning: no broken link or anchor, no page
left out of the nav), and its reference pages are what the code generates (an option or a flag
that exists in the code and not in the docs, or the other way round, fails here)."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys

import pytest

from segmentlog_source.devtools import docs_reference

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_build_strict_passes(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, env={"NO_MKDOCS_2_WARNING": "1",
                                                       "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "options" / "index.html").is_file()
    assert (tmp_path / "site" / "assets" / "bench-latest.png").is_file()


@pytest.mark.parametrize("page", sorted(docs_reference.PAGES))
def test_the_reference_page_is_what_the_code_generates(page):
    committed = docs_reference.PAGES[page].read_text()
    generated = docs_reference.GENERATORS[page]()
    if committed != generated:
        import difflib
        diff = "".join(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True),
                                            "committed", "generated", n=1))
        pytest.fail(f"docs/reference/{page}.md is not what the code says; run `python -m "
                    f"segmentlog_source.devtools.docs_reference` and commit:\n{diff[:3000]}")


def test_every_option_and_command_is_in_its_reference():
    from segmentlog_source.cli.main import COMMANDS
    from segmentlog_source.plan import option_table
    options = docs_reference.PAGES["options"].read_text()
    for option in option_table.OPTIONS:
        assert f"| `{option.name}` |" in options
    cli = docs_reference.PAGES["cli"].read_text()
    for command in COMMANDS:
        assert f"## `segmentlog {command}`" in cli


def test_the_version_is_one_story(capsys):
    """`segmentlog --version`, the changelog and the manual name the installed version."""
    from importlib.metadata import version

    import segmentlog_source
    from segmentlog_source.cli.main import main

    installed = version("segmentlog")
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"segmentlog {installed}\n"
    assert segmentlog_source.__version__ == installed
    assert f"\n## [{installed}] - " in (ROOT / "CHANGELOG.md").read_text()
    assert f"segmentlog\n**{installed}**" in (ROOT / "docs" / "index.md").read_text()
