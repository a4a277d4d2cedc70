"""The cluster as it stood, replayed by segmentlog from the stopped test broker's files (its
`__cluster_metadata-0` log and snapshots, copied once it stopped), against what Kafka 4.4's
Admin API answered before the stop (`admin_answers`): topic ids, partitions and replicas, the
deleted topic gone, every dynamic topic config, the cluster-wide default and the broker's own
configs, with the secret set on the broker in none of `segmentlog cluster`'s text or JSON nor
segmentlog_source.cluster()'s DataFrames. Then `segmentlog retain` on a copy of those files
honours the retention.ms / retention.bytes set with the Admin API (no segmentlog config file),
by Kafka's rules, and segmentlog_source.retain (Spark) takes the same configs."""

from __future__ import annotations

from contextlib import redirect_stdout
import io
import json
from pathlib import Path
import shutil
import time

import pytest

import segmentlog_source
from segmentlog_source.cli.main import main
from segmentlog_source.storage.io.local import LOCAL
from segmentlog_source.values.kafka_internal.cluster_configs import (BROKER_SYNONYMS,
                                                                    topic_configs_of)
from segmentlog_source.values.kafka_internal.cluster_state import OK, cluster_state
from tests.kafka.broker_topics import (ADMIN_CONFIGS, ADMIN_CONFIGS_CHANGED, ADMIN_GROWN,
                                       CLUSTER_DEFAULT)
from tests.storage.helpers import make_batch

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]

HOUR_MS = 3_600_000
REDACTED = "(redacted)"


@pytest.fixture(scope="module")
def stopped(broker_reads) -> Path:
    return broker_reads.files


@pytest.fixture(scope="module")
def state(stopped):
    return cluster_state(LOCAL, str(stopped))


def dynamic(configs: dict, source: str) -> dict[str, str]:
    return {name: c["value"] for name, c in configs.items() if c["source"] == source}


def test_topics_are_those_admin_described(state, admin_answers):
    live = {t["topic"]: t for t in state.topics if not t["deleted"]}
    assert set(live) == set(admin_answers["topics"])
    for name, answer in admin_answers["topics"].items():
        assert live[name]["topic_id"] == answer["topicId"], name
        assert [(p["partition"], p["replicas"]) for p in live[name]["partitions"]] == \
            [(p["partition"], p["replicas"]) for p in answer["partitions"]], name
    assert len(live[ADMIN_GROWN]["partitions"]) == 3          # grown from 1 by the Admin API
    assert admin_answers["deletedTopics"]
    for name, topic_id in admin_answers["deletedTopics"].items():
        assert name not in live
        # the removal is in `deleted` rows when the log after the last snapshot holds it
        assert {t["topic_id"] for t in state.topics if t["topic"] == name} <= {topic_id}
    assert [b["broker_id"] for b in state.brokers] == [1]


def as_admin_shows(configs: dict[str, str]) -> dict[str, str]:
    """The metadata log keeps a config's text as it was set; Admin's describeConfigs shows the
    value parsed by its type and printed again: a DOUBLE set as "1" shows as "1.0"."""
    return {k: repr(float(v)) if k in DOUBLE_TOPIC_CONFIGS else v for k, v in configs.items()}


DOUBLE_TOPIC_CONFIGS = {"min.cleanable.dirty.ratio"}     # the one DOUBLE of Kafka's LogConfig


def test_configs_are_those_admin_described(state, admin_answers):
    image = state.image
    for name, answer in admin_answers["topics"].items():
        assert as_admin_shows(image.topic_configs(name)) == \
            dynamic(answer["configs"], "DYNAMIC_TOPIC_CONFIG"), name
        from_default = dynamic(answer["configs"], "DYNAMIC_DEFAULT_BROKER_CONFIG")
        ours = topic_configs_of(image, name, names=None)
        assert {k: ours[k][0] for k in from_default} == from_default, name
        for k in from_default:
            assert ours[k][1] in {f"cluster default ({synonym})"
                                  for synonym, _ in BROKER_SYNONYMS[k]}, (name, k)
    assert image.topic_configs(ADMIN_CONFIGS) == {**ADMIN_CONFIGS_CHANGED}
    cluster_default = dynamic(admin_answers["brokerDefault"], "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert image.broker_configs("") == cluster_default
    # the scenario's default, beside the min.insync.replicas Kafka's controller writes itself
    assert CLUSTER_DEFAULT.items() <= cluster_default.items()
    broker = {k: c for k, c in admin_answers["brokers"]["1"].items()
              if c["source"] == "DYNAMIC_BROKER_CONFIG"}
    assert image.broker_configs("1") == {k: REDACTED if c["sensitive"] else c["value"]
                                         for k, c in broker.items()}
    assert admin_answers["sensitive"]["name"] in broker


def test_partition_directories_are_checked_against_the_metadata(state, admin_answers, stopped):
    live = {t["topic"] for t in state.topics if not t["deleted"]}
    on_disk = sorted(p.name for p in stopped.iterdir()
                     if p.is_dir() and not p.name.startswith("__cluster_metadata"))
    assert [d["directory"] for d in state.directories] == on_disk
    for d in state.directories:
        if d["topic"] in admin_answers["deletedTopics"]:
            assert d["status"] != OK, d
        elif d["topic"] in live:
            assert d["status"] == OK, d


def test_the_secret_is_in_no_output(stopped, state, admin_answers, kafka_spark):
    secret = admin_answers["sensitive"]["value"]
    outputs = []
    for args in ([], ["--json"], ["--section", "configs"]):
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["cluster", str(stopped), *args]) == 0
        outputs.append(out.getvalue())
    doc = json.loads(outputs[1])
    assert doc["topics"] == state.topics and doc["configs"] == state.configs
    assert admin_answers["sensitive"]["name"] in outputs[0]
    frames = segmentlog_source.cluster(kafka_spark, str(stopped))
    rows = {name: [r.asDict(recursive=True) for r in df.collect()]
            for name, df in frames._asdict().items()}
    assert sorted(rows["configs"], key=str) == sorted(state.configs, key=str)
    assert sorted(rows["topics"], key=str) == sorted(state.topics, key=str)
    assert len(rows["brokers"]) == 1 and rows["directories"] == state.directories
    sensitive = [c for c in rows["configs"] if c["name"] == admin_answers["sensitive"]["name"]]
    assert [c["value"] for c in sensitive] == [REDACTED]
    for text in [*outputs, repr(rows), repr(state)]:
        assert secret not in text


def kafka_deletes(segments: list[tuple[int, int]], retention_ms: int, retention_bytes: int,
                  now: int) -> list[tuple[int, str]]:
    """(index, rule) of the segments ((size, largest timestamp), oldest first, the last one
    active) Kafka's retention deletes, its high watermark at the log end: whole oldest segments
    while they fit in the excess over retention.bytes, then those older than retention.ms."""
    deleted, i = [], 0
    excess = sum(size for size, _ in segments) - retention_bytes
    while i < len(segments) and retention_bytes >= 0 and excess - segments[i][0] >= 0:
        excess -= segments[i][0]
        deleted.append((i, "retention.bytes"))
        i += 1
    while i < len(segments) and retention_ms >= 0 and now - segments[i][1] > retention_ms:
        deleted.append((i, "retention.ms"))
        i += 1
    return deleted


def _place_segments(part: Path, now: int) -> list[tuple[int, int, int]]:
    """Five segments in a copy of the topic's (empty) partition, 5 days, 3 days, 36 h, 1 h and
    0 h old (the last the active one), about 680 KB each but the active one (270 KB): 2.99 MB
    in all, so the oldest goes by retention.bytes (2 MiB), the next by retention.ms (2 days);
    (base offset, size, largest timestamp) of each."""
    for f in part.iterdir():
        if f.suffix in (".log", ".index", ".timeindex", ".snapshot"):
            f.unlink()
    placed, offset = [], 0
    for age_h, records in ((120, 100), (72, 100), (36, 100), (1, 100), (0, 40)):
        ts = now - age_h * HOUR_MS
        batch = make_batch([ts] * records, value_size=1800, base_offset=offset)
        (part / f"{offset:020d}.log").write_bytes(batch)
        placed.append((offset, len(batch), ts))
        offset += records
    return placed


def test_retain_honours_the_retention_set_with_the_admin_api(broker_reads, admin_answers,
                                                             tmp_path, kafka_spark):
    configs = admin_answers["topics"][ADMIN_CONFIGS]["configs"]
    assert {k: configs[k]["source"] for k in ("retention.ms", "retention.bytes")} == \
        dict.fromkeys(("retention.ms", "retention.bytes"), "DYNAMIC_TOPIC_CONFIG")
    retention_ms, retention_bytes = (int(configs[k]["value"])
                                     for k in ("retention.ms", "retention.bytes"))
    assert configs["cleanup.policy"]["value"] == "delete"
    now = int(time.time() * 1000)
    remaining = {}
    for way in ("cli", "spark"):
        data = tmp_path / way
        shutil.copytree(broker_reads.files, data)
        part = data / f"{ADMIN_CONFIGS}-0"
        placed = _place_segments(part, now)
        assert not (data / "_segmentlog").exists()
        expected = kafka_deletes([(size, ts) for _, size, ts in placed], retention_ms,
                                 retention_bytes, now)
        # the placement reaches both rules and keeps the active segment
        assert [rule for _, rule in expected] == ["retention.bytes", "retention.ms"]
        if way == "cli":
            out = io.StringIO()
            with redirect_stdout(out):
                assert main(["retain", str(data), "--topic", ADMIN_CONFIGS]) == 0
            line, = [x for x in out.getvalue().splitlines() if x.startswith(part.name)]
            assert f"retention.bytes={retention_bytes}" in line
            assert f"retention.ms={retention_ms}" in line
            out = io.StringIO()
            with redirect_stdout(out):
                assert main(["config", str(data), "--topic", ADMIN_CONFIGS]) == 0
            assert {tuple(x.split()[:3]) for x in out.getvalue().splitlines()} >= {
                ("retention.ms", str(retention_ms), "topic"),
                ("retention.bytes", str(retention_bytes), "topic")}
        else:
            done = segmentlog_source.retain(kafka_spark, str(data),
                                            topics=[ADMIN_CONFIGS]).collect()
            assert {(r.partition, r.segments_deleted) for r in done} == {(0, 2), (1, 0)}
        remaining[way] = sorted(p.name for p in part.glob("*.log"))
        gone = {placed[i][0] for i, _ in expected}
        assert remaining[way] == [f"{base:020d}.log" for base, _, _ in placed
                                  if base not in gone]
    assert remaining["cli"] == remaining["spark"]
