"""No command that changes files ever changes KRaft's metadata log: `reindex`, `retain`,
`compact` and `generate` on a data directory holding `__cluster_metadata-0`, or on that
directory itself (or `config` on its topic), leave it byte for byte as it was; the read-only
commands refuse it or leave it out rather than print its raw values."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from tests.values import metadata_samples as ms
from tests.values.test_cluster_metadata import assert_no_secret, write_log


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("metadata") / "data"
    assert run_cli("generate", data, "--topics", "events", "--records", "50").returncode == 0
    part = data / "__cluster_metadata-0"
    write_log(part / "00000000000000000000.log", ms.secret_records())
    (part / "00000000000000000019-0000000001.checkpoint").write_bytes(b"\0" * 12)
    return data


COMMANDS = [
    ("reindex", "{path}"),
    ("retain", "--retention-ms", "1", "{path}"),
    ("retain", "--topic", "__cluster_metadata", "--retention-bytes", "0", "{path}"),
    ("compact", "{path}"),
    ("compact", "--topic", "__cluster_metadata", "{path}"),
    ("verify", "{path}"),
    ("stats", "--deep", "{path}"),
    ("generate", "--topics", "__cluster_metadata", "{path}"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:-1]))
@pytest.mark.parametrize("where", ["data", "partition"])
def test_no_command_changes_or_prints_the_metadata_log(data_dir, args, where):
    part = data_dir / "__cluster_metadata-0"
    before = _tree(part)
    path = data_dir if where == "data" else part
    result = run_cli(*(str(path) if a == "{path}" else a for a in args))
    assert _tree(part) == before, result.stdout + result.stderr
    assert_no_secret(result.stdout + result.stderr)
    if where == "partition" or args[0] == "generate" or "--topic" in args:
        assert result.returncode != 0
        assert "__cluster_metadata" in result.stderr


@pytest.mark.parametrize("content", ["snapshot only", "empty"])
def test_nothing_is_written_inside_a_metadata_partition_directory(tmp_path, content):
    """A freshly formatted controller's `__cluster_metadata-0` holds only its bootstrap
    snapshot (or nothing yet): taken as a data directory, it used to get an `events-0`
    partition written inside it."""
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    if content == "snapshot only":
        (part / "00000000000000000000-0000000000.checkpoint").write_bytes(b"\0" * 12)
    before = _tree(part)
    for path, cwd in ((part, None), (".", part)):
        result = run_cli("generate", path, "--topics", "events", "--records", "5", cwd=cwd)
        assert result.returncode != 0
        assert "it is KRaft's metadata log directory" in result.stderr
    assert _tree(part) == before and sorted(p.name for p in part.iterdir()) == sorted(before)


def test_config_writes_nothing_for_or_inside_the_metadata_log(data_dir):
    """`config --set` used to write `_segmentlog/topic-configs/<topic>.properties` inside a
    `__cluster_metadata-0` given as DIR, and a config for topic __cluster_metadata."""
    part = data_dir / "__cluster_metadata-0"
    before, data_before = _tree(part), _tree(data_dir)
    inside = run_cli("config", "--topic", "events", "--set", "retention.ms=5", part)
    assert inside.returncode != 0 and "KRaft's metadata log directory" in inside.stderr
    named = run_cli("config", "--topic", "__cluster_metadata", "--set", "retention.ms=5",
                    data_dir)
    assert named.returncode != 0 and "KRaft's metadata log" in named.stderr
    assert _tree(part) == before and _tree(data_dir) == data_before
    # reading stays allowed: it takes the topic's configs from the metadata log, whose (junk)
    # snapshot is then an error naming it and its byte, with nothing written
    shown = run_cli("config", "--topic", "events", data_dir)
    assert shown.returncode == 2, shown
    assert "00000000000000000019-0000000001.checkpoint at byte 0" in shown.stderr
    assert _tree(part) == before and _tree(data_dir) == data_before
