"""What a user installs is what is tested here: the wheel (and sdist) built from this checkout,
installed into fresh virtual environments with no repository on sys.path, driven by smoke.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from segmentlog_source.devtools import test_envs

REPO = Path(__file__).resolve().parents[2]
SMOKE = Path(__file__).with_name("smoke.py")
# Where a platform's PySpark already stands: the oldest pair of the compatibility run
PLATFORM = test_envs.ENVS["py310-pyspark4.1"]

pytestmark = pytest.mark.xdist_group("install")


def run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert out.returncode == 0, f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out


def outside_repo_env(python: Path) -> dict:
    """The environment of a user's process: no PYTHONPATH, Spark's workers on `python`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_HOME")}
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([test_envs.uv(), "build", "-q", "--sdist", "--wheel", "--out-dir", out, REPO])
    return out


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    (found,) = dist.glob("segmentlog-*.whl")
    return found


def venv(root: Path, interpreter: str) -> Path:
    run([test_envs.uv(), "venv", "-q", "--python", interpreter, root])
    return root / "bin" / "python"


def versions(python: Path) -> dict:
    listed = run([test_envs.uv(), "pip", "list", "--python", python, "--format", "json"])
    return {p["name"].lower(): p["version"] for p in json.loads(listed.stdout)}


def test_sdist_and_wheel_hold_the_package(dist, wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "pyspark_segmentlog.py" in names
    assert "segmentlog_source/spark/source.py" in names
    assert not [n for n in names if n.startswith("tests/")]
    (sdist,) = dist.glob("segmentlog-*.tar.gz")
    assert sdist.stat().st_size > 0
    meta = next(n for n in names if n.endswith("METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(meta).decode().splitlines()
                if line.startswith("Requires-Dist:")]
    # PySpark comes only with the extra: it belongs to the platform
    assert [r for r in requires if "pyspark" in r] == [
        'Requires-Dist: pyspark>=4.0; extra == "spark"']
    assert not [r for r in requires if "==" in r.split(";")[0]], requires


def test_command_line_runs_without_pyspark(tmp_path, wheel):
    python = venv(tmp_path / "venv", sys.executable)
    run([test_envs.uv(), "pip", "install", "-q", "--python", python,
         "-c", test_envs.lock_file(test_envs.ENVS[test_envs.MAIN_LOCK]), wheel])
    assert "pyspark" not in versions(python)
    out = run([python, SMOKE, "cli", tmp_path], cwd=tmp_path, env=outside_repo_env(python))
    assert "ok verify" in out.stdout and "ok dump" in out.stdout, out.stdout
    no_spark = subprocess.run([python, "-c", "import pyspark"], capture_output=True)
    assert no_spark.returncode != 0


def test_wheel_beside_a_platform_pyspark(tmp_path, wheel):
    """A platform's PySpark, numpy and pyarrow stay as they are when the wheel goes in, and
    format("segmentlog") is found there without register(), on a local session and from a
    Spark Connect client."""
    python = venv(tmp_path / "venv", test_envs.find_interpreter(PLATFORM.python))
    lock = test_envs.lock_file(PLATFORM)
    run([test_envs.uv(), "pip", "install", "-q", "--python", python, "-c", lock,
         f"pyspark[connect]=={PLATFORM.pyspark}", "numpy", "pyarrow"])
    before = versions(python)
    run([test_envs.uv(), "pip", "install", "-q", "--python", python, "-c", lock, wheel])
    after = versions(python)
    for name in ("pyspark", "py4j", "numpy", "pyarrow"):
        assert after[name] == before[name], (name, before[name], after[name])
    assert after["pyspark"] == PLATFORM.pyspark
    env = outside_repo_env(python)
    run([python, SMOKE, "cli", tmp_path], cwd=tmp_path, env=env)
    out = run([python, SMOKE, "spark", tmp_path], cwd=tmp_path, env=env)
    assert "ok write read back" in out.stdout, out.stdout
    out = run([python, SMOKE, "connect", tmp_path], cwd=tmp_path, env=env)
    assert "ok write read back" in out.stdout, out.stdout
