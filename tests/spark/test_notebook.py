"""notebooks/quickstart.ipynb runs top to bottom, and prints what its committed outputs show.

The notebook is executed with nbclient in a fresh directory (what it writes stays there), on
the project's interpreter as its kernel; then every cell's text output (printed lines, results,
tables) is compared with the committed one. Timings (none printed today) and what planning cost
(explain's count of index bytes and requests) are masked; images and stderr (Spark's JVM start-up
lines) are not compared.

    python -m tests.spark.test_notebook      # re-execute it in place: new outputs committed
                                            # as they are, and its chart copied next to it
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"
CHART = NOTEBOOK.with_name("quickstart-records-per-minute.png")
WRITTEN_CHART = Path("quickstart-data") / "records-per-minute.png"
TIMEOUT_S = 600

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_TIMING = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|min)\b")
# What planning cost (explain's last line): like a timing, it moves with every change to how the
# planner reads indexes, while the bytes a read reads (the line before it) must not move.
_PLANNER_COST = re.compile(r"planning read [\d,]+ bytes of indexes and batch headers in [\d,]+ "
                           r"requests")


def execute(notebook: Path, cwd: Path):
    """The notebook, executed in `cwd`, with stderr outputs dropped (JVM noise, not results)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)   # timings: a diff on every refresh
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if not (o.output_type == "stream" and o.name == "stderr")]
    return nb


def text_outputs(nb) -> list[list[str]]:
    """Per code cell, its text outputs in order (timings masked)."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        texts = []
        for output in cell.outputs:
            if output.output_type == "stream":
                texts.append(output.text)
            elif output.output_type in ("execute_result", "display_data"):
                texts.append(output.get("data", {}).get("text/plain", ""))
            elif output.output_type == "error":
                texts.append(f"{output.ename}: {output.evalue}")
        cells.append([_PLANNER_COST.sub("<planner cost>", _TIMING.sub("<time>", t))
                      for t in texts])
    return cells


def test_the_notebook_prints_what_is_committed(tmp_path, monkeypatch):
    import nbformat

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    committed = nbformat.read(NOTEBOOK, as_version=4)
    assert all(c.outputs for c in committed.cells if c.cell_type == "code" and c.source.strip()
               and not c.source.startswith(("import os", "spark.stop"))), \
        "committed without outputs: run python -m tests.spark.test_notebook"
    fresh = execute(NOTEBOOK, tmp_path)
    assert text_outputs(fresh) == text_outputs(committed), \
        "the notebook prints something else now; if rightly so: python -m tests.spark.test_notebook"
    assert (tmp_path / WRITTEN_CHART).stat().st_size > 10_000


def main() -> int:
    import nbformat

    with tempfile.TemporaryDirectory() as work:
        nb = execute(NOTEBOOK, Path(work))
        nbformat.write(nb, NOTEBOOK)
        shutil.copyfile(Path(work) / WRITTEN_CHART, CHART)
    print(f"wrote {NOTEBOOK} and {CHART}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
