"""The jar cache: a machine that cannot fetch the jars gets a reason it can act on, once, rather
than a Maven stack trace, or the same Maven failure again in every test process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from segmentlog_source.devtools.kafka import jars

pytestmark = pytest.mark.xdist_group("kafka")

FAKE_MVN = """#!/bin/sh
echo run >> "{calls}"
echo "[ERROR] Failed to execute goal on project segmentlog-kafka-jars: Could not resolve"
echo "[ERROR] Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.4.0 from/to central"
echo "[ERROR]   (https://repo.maven.apache.org/maven2): Unknown host repo.maven.apache.org"
exit 1
"""


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEGMENTLOG_JARS", str(tmp_path / "jars"))
    return tmp_path


def _fake_mvn(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mvn").write_text(FAKE_MVN.format(calls=tmp_path / "calls"))
    (bin_dir / "mvn").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return tmp_path / "calls"


def test_no_maven_says_so(empty_cache, monkeypatch):
    monkeypatch.setenv("PATH", str(empty_cache))   # no mvn there
    with pytest.raises(jars.JarsUnavailable, match="no `mvn` on PATH"):
        jars.fetch("spark-kafka")
    assert not jars.is_complete("spark-kafka")


def test_unreachable_central_is_named_and_remembered(empty_cache, monkeypatch):
    calls = _fake_mvn(empty_cache, monkeypatch)
    with pytest.raises(jars.JarsUnavailable, match=r"Maven Central \(https://repo.maven.apache.org"
                                                   r"/maven2\) is unreachable") as first:
        jars.fetch("kafka")
    assert "Unknown host" in str(first.value)
    with pytest.raises(jars.JarsUnavailable) as again:   # a test process after make's fetch
        jars.fetch("kafka")
    assert str(again.value) == str(first.value)
    assert calls.read_text().count("run") == 1
    with pytest.raises(jars.JarsUnavailable):             # the fetch step always tries
        jars.fetch("kafka", force=True)
    assert calls.read_text().count("run") == 2


def test_the_fetch_command_reports_and_fails_without_a_traceback(empty_cache, monkeypatch):
    _fake_mvn(empty_cache, monkeypatch)
    result = subprocess.run([sys.executable, "-m", "segmentlog_source.devtools.kafka.jars"],
                            capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "fetching jar set kafka-4.4.0" in result.stderr
    assert result.stderr.count("is unreachable") == len(jars.JAR_SETS)   # every set


def test_a_complete_set_needs_no_maven(empty_cache, monkeypatch):
    folder = jars.folder("spark-kafka")
    folder.mkdir(parents=True)
    (folder / "a.jar").write_bytes(b"")
    (folder / jars.COMPLETE).write_text("a.jar\n")
    monkeypatch.setenv("PATH", str(empty_cache))
    assert jars.jar_paths("spark-kafka") == [folder / "a.jar"]


FETCHING_MVN = """#!/bin/sh
for arg in "$@"; do case "$arg" in -Djars.root=*) root="${arg#-Djars.root=}";; esac; done
echo "[INFO] Downloading from central: https://repo.example/a/a.jar"
echo "[INFO] Downloaded from central: https://repo.example/a/a.jar (2.5 MB at 9 MB/s)"
echo "[INFO] Downloaded from central: https://repo.example/b/b.pom (512 B at 1 MB/s)"
mkdir -p "$root/spark-kafka-4.2.0" && echo jar > "$root/spark-kafka-4.2.0/a.jar"
"""


def test_a_fetch_counts_what_maven_downloaded(empty_cache, monkeypatch, capsys):
    bin_dir = empty_cache / "bin"
    bin_dir.mkdir()
    (bin_dir / "mvn").write_text(FETCHING_MVN)
    (bin_dir / "mvn").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    assert [p.name for p in jars.jar_paths("spark-kafka")] == ["a.jar"]
    assert "(2 files, 2.5 MB downloaded)" in capsys.readouterr().err
    assert jars.is_complete("spark-kafka")


def test_every_jar_set_is_a_profile_of_the_pom_with_the_same_folder():
    """jars.py and pom.xml name each set twice (profile, folder): a set whose profile is
    missing, or whose folder the pom spells otherwise, would be fetched into one folder and
    looked for in another. kafka-tiered is the one jar of LocalTieredStorage, nothing else."""
    import xml.etree.ElementTree as ET

    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    pom = ET.parse(jars.POM).getroot()
    properties = {p.tag.split("}")[1]: p.text for p in pom.find("m:properties", ns)}
    profiles = {p.findtext("m:id", namespaces=ns): p for p in pom.iterfind("m:profiles/m:profile",
                                                                           ns)}
    for jar_set in jars.JAR_SETS.values():
        profile = profiles[jar_set.profile]
        folder = profile.findtext("m:properties/m:jarset", namespaces=ns)
        for name, value in properties.items():
            folder = folder.replace("${" + name + "}", value)
        assert folder == jar_set.folder
    assert properties["kafka.version"] == jars.KAFKA_VERSION
    (dependency,) = profiles["kafka-tiered"].iterfind("m:dependencies/m:dependency", ns)
    assert [dependency.findtext(f"m:{tag}", namespaces=ns)
            for tag in ("artifactId", "classifier")] == ["kafka-storage", "test-fixtures"]
    assert [(e.findtext("m:groupId", namespaces=ns), e.findtext("m:artifactId", namespaces=ns))
            for e in dependency.iterfind("m:exclusions/m:exclusion", ns)] == [("*", "*")]
