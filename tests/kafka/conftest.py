"""One real Kafka broker for every test in tests/kafka, and the session's phases around it.

Every test module here is marked `xdist_group("kafka")`, so `pytest -n 2 --dist loadgroup` runs
them all in one worker, against this one broker. Its life, in the order the fixtures run:

    broker        format and start (3-7 s)
    produced      one KafkaClient run creates and fills every topic (broker_topics.py), then
                  changes configs, partitions and topics with the Admin API, adds a SCRAM user,
                  and a share group consumes; the Admin API's view of the cluster at the end
                  is kept in `<broker dir>/admin-answers.json` (the admin_answers fixture)
    broker_reads  every ReadCase, read by Spark's Kafka source from the broker and by segmentlog
                  from its log directory while it runs (active segments with preallocated,
                  zero-filled indexes); then SIGTERM, and segmentlog again on the stopped
                  directory. Copies of the broker's files are kept for the dump comparison.
    adoption      segmentlog writes a topic, and its files replace the broker's in two rounds:
                  a start with the clean-shutdown marker, a start without it (adoption.py).
                  The broker is stopped at the end.
    log_manager_live
                  segmentlog's LogManager retains and compacts placed files in the broker's own
                  data directory, which the broker then loads, with and without the marker;
                  meanwhile the broker's cleaner compacts lm-keyed, copied beforehand, and
                  segmentlog compacts the copy (log_manager_live.py). Stopped at the end.

tiered_live (tiered_live.py) is a second broker of its own, with tiered storage on: it copies
segments to a remote tier and deletes them locally, and Spark's Kafka source reads it; its
phases go to its own `logs/phases.txt`.

Tests read the broker's answers from these fixtures; no test restarts it. Where each phase's
time went is in `<broker dir>/logs/phases.txt`; the broker's own log is `logs/server.log`.
Both stay under pytest's basetemp when a test fails.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from segmentlog_source.devtools.kafka import jars
from segmentlog_source.devtools.kafka.broker import KafkaBroker
from segmentlog_source.devtools.kafka.java_client import KafkaClient
from tests import conftest as shared_conftest
from tests.kafka.broker_topics import (ADMIN_ANSWERS_FILE, SENSITIVE_CONFIG, ReadCase,
                                      base_timestamp, produce_commands, read_cases)
from tests.kafka.reads import Read, kafka_read, segmentlog_read

# Topics whose files later phases replace or clean: not copied for the dump comparison.
ADOPTED_PREFIXES = ("adopt-", "crc-", "gap-", "lm-")


class Phases:
    """How long each phase took, appended to a file beside the broker's logs."""

    def __init__(self, path: Path):
        self.path = path

    def timed(self, name: str, started: float) -> None:
        with open(self.path, "a") as f:
            f.write(f"{time.monotonic() - started:7.1f} s  {name}\n")


@pytest.fixture(scope="session")
def kafka_jars() -> None:
    try:
        jars.fetch("kafka")
    except jars.JarsUnavailable as err:
        pytest.fail(f"the Kafka tests need the Kafka {jars.KAFKA_VERSION} jars: {err}",
                    pytrace=False)


@pytest.fixture(scope="session")
def kafka_spark(spark):
    """The shared `spark` session, which must have Spark's Kafka connector (tests/conftest.py)."""
    if shared_conftest.SPARK_KAFKA_MISSING:
        pytest.fail("the shared Spark session started without Spark's Kafka connector, so "
                    "format('kafka') is unavailable: " + shared_conftest.SPARK_KAFKA_MISSING[0],
                    pytrace=False)
    return spark


@pytest.fixture(scope="session")
def broker(kafka_jars, tmp_path_factory):
    started = time.monotonic()
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka-broker"))
    broker.phases = Phases(broker.workdir / "logs" / "phases.txt")
    broker.start()
    broker.phases.timed("broker: format and start", started)
    yield broker
    broker.stop()


@dataclass
class Produced:
    base: int                   # CreateTime of record 0 (broker_topics.base_timestamp)
    answers: list[dict]
    topic_ids: dict[str, str]
    admin_answers: Path | None = None   # written before the broker first stops


@pytest.fixture(scope="session")
def produced(broker) -> Produced:
    started = time.monotonic()
    base = base_timestamp()
    answers = KafkaClient(broker.bootstrap).run(produce_commands(base))
    broker.phases.timed("KafkaClient: create and produce every topic, Admin changes, a share "
                        "group (one JVM)", started)
    produced = Produced(base, answers, {a["topic"]: a["topicId"] for a in answers
                                        if a["op"] == "create-topic"})
    produced.admin_answers = _write_admin_answers(broker.workdir / ADMIN_ANSWERS_FILE, answers)
    return produced


def _write_admin_answers(path: Path, answers: list[dict]) -> Path:
    """The describe-all answer (KafkaClient.java), with what the commands before it did that
    the Admin API no longer shows: deleted topics, the sensitive config's secret, share groups."""
    described, = (a for a in answers if a["op"] == "describe-all")
    resource, name, secret = SENSITIVE_CONFIG
    out = {k: v for k, v in described.items() if k not in ("line", "op")}
    out["deletedTopics"] = {a["topic"]: a["topicId"] for a in answers
                            if a["op"] == "delete-topic"}
    out["sensitive"] = {"resource": resource, "name": name, "value": secret}
    out["shareGroups"] = {a["group"]: {k: a[k] for k in ("topic", "records", "rejected")}
                          for a in answers if a["op"] == "share-consume"}
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return path


@pytest.fixture(scope="session")
def admin_answers(produced) -> dict:
    """The Admin API's view of the test broker after every change (broker_topics.py's
    admin_commands), recorded before it first stopped; the file is
    `<broker dir>/admin-answers.json`:

        clusterId      the cluster id
        topics         {name: {"topicId", "internal", "partitions": [{"partition", "leader",
                       "replicas", "isr"}], "configs": {config: {"value", "source",
                       "sensitive", "readOnly"}}}}: every topic, internal ones included, with
                       every describeConfigs entry (source: DEFAULT_CONFIG,
                       DYNAMIC_TOPIC_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, ...)
        brokerDefault  {config: {...}}: the cluster-wide dynamic configs (DYNAMIC_* only)
        brokers        {"1": {config: {...}}}: each broker's dynamic configs (a sensitive one's
                       value is null, as Admin answers)
        scramUsers     {user: [{"mechanism", "iterations"}]}
        deletedTopics  {name: topic id}: topics deleted before the describe
        sensitive      {"resource", "name", "value"}: the password-type config and its secret
        shareGroups    {group: {"topic", "records", "rejected"}}
    """
    return json.loads(produced.admin_answers.read_text())


@dataclass
class BrokerReads:
    cases: list[ReadCase]
    kafka: dict[str, Read] = field(default_factory=dict)
    live: dict[str, Read] = field(default_factory=dict)     # segmentlog, broker running
    stopped: dict[str, Read] = field(default_factory=dict)  # segmentlog, broker stopped
    files: Path | None = None          # copies of the broker's partition directories, stopped
    active_copies: Path | None = None  # two active segments copied while it ran


@pytest.fixture(scope="session")
def broker_reads(kafka_spark, broker, produced, tmp_path_factory) -> BrokerReads:
    spark, phases = kafka_spark, broker.phases
    reads = BrokerReads(read_cases(produced.base))

    def segmentlog_side(case: ReadCase) -> Read:
        return segmentlog_read(spark, broker.data_dir, {**case.options, **case.segmentlog_only})

    started = time.monotonic()
    for case in reads.cases:
        reads.kafka[case.name] = kafka_read(spark, broker, {**case.options, **case.kafka_only})
    phases.timed("format('kafka'): every read case", started)
    started = time.monotonic()
    for case in reads.cases:
        reads.live[case.name] = segmentlog_side(case)
    phases.timed("format('segmentlog'), broker running: every read case", started)
    reads.active_copies = _copy_active_segments(broker, tmp_path_factory.mktemp("active"))
    started = time.monotonic()
    assert broker.stop(), f"the broker did not stop by itself:\n{broker.log_tail()}"
    phases.timed("broker: stop (SIGTERM)", started)
    started = time.monotonic()
    for case in reads.cases:
        reads.stopped[case.name] = segmentlog_side(case)
    phases.timed("format('segmentlog'), broker stopped: every read case", started)
    reads.files = tmp_path_factory.mktemp("broker-files")
    for part in sorted(broker.data_dir.iterdir()):
        if part.is_dir() and not part.name.startswith(ADOPTED_PREFIXES):
            shutil.copytree(part, reads.files / part.name)
    return reads


def _copy_active_segments(broker: KafkaBroker, into: Path) -> Path:
    """The active segment of two partitions, copied while the broker runs: its .index and
    .timeindex are still preallocated (10 MiB, zero-filled after the last entry)."""
    for topic in ("codec-none", "txn"):
        part = broker.partition_dir(topic)
        active = max(int(p.name[:20]) for p in part.glob("*.log"))
        (into / part.name).mkdir()
        for suffix in (".log", ".index", ".timeindex"):
            name = f"{active:020d}{suffix}"
            shutil.copyfile(part / name, into / part.name / name)
    return into


@pytest.fixture(scope="session")
def adoption(kafka_spark, broker, produced, broker_reads, tmp_path_factory):
    from tests.kafka.adoption import run_adoption

    started = time.monotonic()
    result = run_adoption(kafka_spark, broker, produced, tmp_path_factory)
    broker.phases.timed("adoption: segmentlog writes, two broker rounds", started)
    return result


@pytest.fixture(scope="session")
def log_manager_live(kafka_spark, broker, produced, adoption, tmp_path_factory):
    from tests.kafka.log_manager_live import run_log_manager_live

    started = time.monotonic()
    result = run_log_manager_live(kafka_spark, broker, tmp_path_factory)
    broker.phases.timed("log manager: segmentlog retains and compacts, two broker rounds, "
                        "the broker's cleaner against segmentlog's", started)
    return result


@pytest.fixture(scope="session")
def tiered_live(kafka_spark, kafka_jars, tmp_path_factory):
    """A second broker, with tiered storage on (tiered_live.py), run to its stop."""
    from tests.kafka.tiered_live import run_tiered_live

    try:
        jars.fetch("kafka-tiered")
    except jars.JarsUnavailable as err:
        pytest.fail(f"the tiered storage tests need Kafka's LocalTieredStorage jar: {err}",
                    pytrace=False)
    workdir = tmp_path_factory.mktemp("kafka-tiered")
    (workdir / "broker" / "logs").mkdir(parents=True)
    phases = Phases(workdir / "broker" / "logs" / "phases.txt")
    started = time.monotonic()
    result = run_tiered_live(kafka_spark, workdir, phases.timed)
    phases.timed("tiered: the whole fixture", started)
    result.timings["the whole fixture"] = round(time.monotonic() - started, 1)
    return result
