"""MkDocs hooks (mkdocs.yml: hooks): files that live elsewhere in the repository appear in the
site under docs' names, so there is one copy of each: the changelog, the quick start's chart and
the benchmark chart."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
# site path -> repository path
BORROWED = {
    "changelog.md": "CHANGELOG.md",
    "assets/quickstart-records-per-minute.png": "notebooks/quickstart-records-per-minute.png",
    "assets/bench-latest.png": "bench/results/latest.png",
}


def on_files(files, config):
    for site_path, repo_path in BORROWED.items():
        files.append(File.generated(config, site_path, abs_src_path=str(ROOT / repo_path)))
    return files
