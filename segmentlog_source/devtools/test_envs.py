"""The Python environments of the compatibility run: one interpreter and one PySpark each, kept
outside the repository (`~/.cache/segmentlog/venvs/<name>/`, or $SEGMENTLOG_VENVS/<name>/).

Each environment installs this checkout (editable, so Spark's Python workers import the same code)
with its test extra, under the exact versions of `conf/constraints/<name>.txt`. Those files are the
lock: `lock` regenerates them with uv; the oldest pair resolves the package's own dependencies
`--resolution lowest-direct`, so their lower bounds in pyproject.toml are what that pair tests.

The interpreters come from pyenv when it is there ($PYENV_ROOT/versions/3.X.*), else from
`python3.X` on PATH; $SEGMENTLOG_PYTHON_3_X names one explicitly.

    python -m segmentlog_source.devtools.test_envs path NAME     # build if needed, print its python
    python -m segmentlog_source.devtools.test_envs run NAME... -- ARGS   # pytest ARGS, all at once
    python -m segmentlog_source.devtools.test_envs lock [NAME...]     # regenerate the constraints
    python -m segmentlog_source.devtools.test_envs list
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "conf" / "constraints"
MAIN_LOCK = "main"      # the .venv of `make test`: Python 3.11, the newest PySpark


@dataclass(frozen=True)
class TestEnv:
    name: str
    python: str          # "3.10"
    pyspark: str         # the exact PySpark release
    extras: str          # the package's extras installed beside PySpark
    lowest: bool = False  # the package's own dependencies at their lower bounds


ENVS = {e.name: e for e in (
    TestEnv(MAIN_LOCK, "3.11", "4.3.0", "spark,test,bench,docs"),
    TestEnv("py310-pyspark4.0", "3.10", "4.0.5", "test", lowest=True),
    TestEnv("py310-pyspark4.1", "3.10", "4.1.4", "test", lowest=True),
    TestEnv("py312-pyspark4.2", "3.12", "4.2.1", "test"),
    TestEnv("py313-pyspark4.3", "3.13", "4.3.0", "test"),
)}
# The pairs `make test` runs the compatibility subset on (oldest, newest); `make test-matrix` runs
# every environment but the main one.
OLDEST, NEWEST = "py310-pyspark4.0", "py313-pyspark4.3"
MATRIX = [name for name in ENVS if name != MAIN_LOCK]


class EnvError(RuntimeError):
    pass


def venvs_root() -> Path:
    return Path(os.environ.get("SEGMENTLOG_VENVS", Path.home() / ".cache" / "segmentlog" / "venvs"))


def find_interpreter(version: str) -> str:
    """A Python `version` ("3.10") interpreter, from $SEGMENTLOG_PYTHON_3_10, pyenv, or PATH."""
    explicit = os.environ.get("SEGMENTLOG_PYTHON_" + version.replace(".", "_"))
    if explicit:
        return explicit
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted(glob.glob(str(pyenv_root / "versions" / f"{version}.*" / "bin" / "python")),
                   key=lambda p: [int(x) for x in Path(p).parts[-3].split(".") if x.isdigit()])
    if found:
        return found[-1]
    on_path = shutil.which(f"python{version}")
    if on_path:
        return on_path
    raise EnvError(
        f"no Python {version} interpreter: install it (pyenv install {version}, or your system's "
        f"python{version}) or name one with SEGMENTLOG_PYTHON_{version.replace('.', '_')}")


def uv() -> str:
    """uv, installed beside the interpreter running this module (the repository's .venv)."""
    candidate = Path(sys.executable).with_name("uv")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("uv")
    if found:
        return found
    raise EnvError("uv is missing: `make venv` installs it into .venv")


def _run(cmd: list[str], **kwargs) -> None:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def lock_file(env: TestEnv) -> Path:
    return CONSTRAINTS / f"{env.name}.txt"


def lock(env: TestEnv) -> Path:
    """Resolve `env`'s versions into conf/constraints/<name>.txt, the one place they are pinned."""
    CONSTRAINTS.mkdir(parents=True, exist_ok=True)
    requirements = CONSTRAINTS / f".{env.name}.in"
    requirements.write_text(f"pyspark=={env.pyspark}\n")
    out = lock_file(env)
    cmd = [uv(), "pip", "compile", "-q", "--python-version", env.python,
           "--no-header", "--no-annotate", str(REPO / "pyproject.toml"), str(requirements),
           "-o", str(out)]
    for extra in env.extras.split(","):
        cmd += ["--extra", extra]
    if env.lowest:
        cmd += ["--resolution", "lowest-direct"]
    try:
        _run(cmd, cwd=REPO)
    finally:
        requirements.unlink()
    # the checkout itself is installed editable; it has no place in its own constraints
    lines = [line for line in out.read_text().splitlines()
             if line.strip() and not line.startswith(("-e ", "segmentlog"))]
    out.write_text(f"# {env.name}: Python {env.python}, PySpark {env.pyspark}"
                   f"{', the lowest versions pyproject.toml allows' if env.lowest else ''}.\n"
                   "# Generated by `python -m segmentlog_source.devtools.test_envs lock`.\n"
                   + "\n".join(lines) + "\n")
    return out


def _stamp(env: TestEnv) -> str:
    digest = hashlib.sha256()
    for path in (lock_file(env), REPO / "pyproject.toml"):
        digest.update(path.read_bytes())
    digest.update(str(REPO).encode())
    return digest.hexdigest()


def build(env: TestEnv) -> Path:
    """The environment's python, created or brought up to date with its constraints file."""
    if not lock_file(env).exists():
        raise EnvError(f"{lock_file(env)} is missing: run `make lock`")
    home = venvs_root() / env.name
    python = home / "bin" / "python"
    stamp = home / ".segmentlog-stamp"
    if stamp.exists() and stamp.read_text() == _stamp(env) and python.exists():
        return python
    # built anew whenever the lock or the project changed: a package left over from before
    # (built against another numpy, say) never joins the run (uv links from its cache: fast)
    shutil.rmtree(home, ignore_errors=True)
    _run([uv(), "venv", "-q", "--python", find_interpreter(env.python), str(home)])
    _run([uv(), "pip", "install", "-q", "--python", str(python), "-c", str(lock_file(env)),
          "--config-settings", "editable_mode=compat", "-e", f"{REPO}[{env.extras}]",
          f"pyspark=={env.pyspark}"])
    stamp.write_text(_stamp(env))
    return python


def _pytest(env: TestEnv, python: Path, args: list[str], **kwargs) -> subprocess.Popen:
    environ = dict(os.environ, PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python),
                   SEGMENTLOG_TEST_ENV=env.name)
    # the main .venv's SPARK_HOME / VIRTUAL_ENV would point Spark at the wrong installation
    for key in ("SPARK_HOME", "VIRTUAL_ENV"):
        environ.pop(key, None)
    return subprocess.Popen([str(python), "-m", "pytest", *args], cwd=REPO, env=environ, **kwargs)


def run_pytest(envs: list[TestEnv], args: list[str]) -> list[str]:
    """pytest `args` in each of `envs` at once (each a Spark of its own, mostly waiting on JVM
    and worker start-ups: two share two cores well); each run's output is printed whole when it
    ends, under a header. The names of the environments whose run failed."""
    pythons = [build(env) for env in envs]     # one at a time: uv shares its cache
    runs = []
    for env, python in zip(envs, pythons):
        out = tempfile.TemporaryFile()
        runs.append((env, _pytest(env, python, args, stdout=out, stderr=subprocess.STDOUT), out))
    failed = []
    for env, proc, out in runs:
        code = proc.wait()
        out.seek(0)
        print(f"== {env.name}: Python {env.python}, PySpark {env.pyspark}", flush=True)
        sys.stdout.write(out.read().decode(errors="replace"))
        sys.stdout.flush()
        out.close()
        if code != 0:
            failed.append(env.name)
    return failed


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("path", "run", "lock", "list"):
        print(__doc__, file=sys.stderr)
        return 2
    verb, rest = argv[0], argv[1:]
    try:
        if verb == "list":
            for env in ENVS.values():
                lowest = "\tlowest bounds" if env.lowest else ""
                print(f"{env.name}\tPython {env.python}\tPySpark {env.pyspark}{lowest}")
            return 0
        if verb == "lock":
            for name in rest or list(ENVS):
                print(lock(ENVS[name]))
            return 0
        if verb == "path":
            print(build(ENVS[rest[0]]))
            return 0
        names, args = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest \
            else (rest[:1], rest[1:])
        failed = run_pytest([ENVS[name] for name in names], args)
        if failed:
            print(f"compatibility run failed on: {', '.join(failed)}", file=sys.stderr)
        return 1 if failed else 0
    except KeyError as err:
        print(f"no such environment: {err}; `list` names them", file=sys.stderr)
        return 2
    except (EnvError, subprocess.CalledProcessError) as err:
        print(f"test environment: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
