"""The log manager on what a crash or damage leaves: an interrupted cleaning's announced reach,
damaged checkpoints, intent files and batches, and config values Java would refuse. Each is a
clear error naming the file (or config) with nothing changed, or is kept as it must be."""

from __future__ import annotations

from pathlib import Path

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.errors import BadOptionError, CorruptDataError
from segmentlog_source.storage.log.log_manager import LogManager
from segmentlog_source.storage.log.partition_log import PartitionLog

COMPACT = {"cleanup.policy": "compact"}


@pytest.fixture
def data(tmp_path) -> Path:
    generate_log(str(tmp_path / "d"), topics=["t"], partitions=1, records=3000, key_size=3,
                 value_size=40, segment_bytes=15_000, seed=4)
    return tmp_path / "d"


def files(path: Path) -> dict[str, bytes]:
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(path.rglob("*"))
            if f.is_file() and f.name not in (".segmentlog.lock", ".lock")}   # (empty locks)


def test_an_interrupted_cleanings_reach_outlives_a_shorter_cleaning(data):
    part = data / "t-0"
    LogManager(str(data), overrides=COMPACT).compact()
    cleaned_to = PartitionLog.open(str(part)).dirty_from
    generate_log(str(data), topics=["t"], partitions=1, records=3000, key_size=3,
                 value_size=40, segment_bytes=15_000, seed=9)
    log = PartitionLog.open(str(part))
    reach = log.segments[-2].base_offset     # as if a cleaning had swapped up to here
    assert reach > cleaned_to
    (part / ".segmentlog.cleaning").write_text(f"{reach}\n")
    assert PartitionLog.open(str(part)).dirty_from == reach
    # a cleaning that reaches less far (nothing new is cleanable) must not forget it
    LogManager(str(data), overrides={**COMPACT, "min.compaction.lag.ms": str(2**62)}).compact()
    assert (part / ".segmentlog.cleaning").read_text().strip() == str(reach)
    assert PartitionLog.open(str(part)).dirty_from == reach


@pytest.mark.parametrize("text", ["abc", "", "-4", "99999999999"])
def test_a_bad_intent_file_is_an_error_naming_it(data, text):
    part = data / "t-0"
    (part / ".segmentlog.cleaning").write_text(text)
    before = files(data)
    with pytest.raises(CorruptDataError) as info:
        LogManager(str(data), overrides=COMPACT).compact()
    assert ".segmentlog.cleaning" in str(info.value)
    assert files(data) == before


@pytest.mark.parametrize("name", ["recovery-point-offset-checkpoint",
                                  "log-start-offset-checkpoint", "cleaner-offset-checkpoint"])
@pytest.mark.parametrize("run", ["retain", "compact"])
def test_a_bad_checkpoint_stops_before_any_change(data, name, run):
    (data / name).write_text("0\n1\nt zero 5\n")
    before = files(data)
    manager = LogManager(str(data), overrides={**COMPACT, "cleanup.policy": "compact,delete",
                                               "retention.ms": "1"})
    with pytest.raises(CorruptDataError) as info:
        getattr(manager, run)()
    assert name in str(info.value)
    assert files(data) == before


def test_a_corrupt_batch_in_the_cleaned_region_stops_before_any_swap(data):
    part = data / "t-0"
    LogManager(str(data), overrides=COMPACT).compact()
    generate_log(str(data), topics=["t"], partitions=1, records=3000, key_size=3,
                 value_size=40, segment_bytes=15_000, seed=9)
    second = sorted(part.glob("*.log"))[1]
    raw = bytearray(second.read_bytes())
    raw[61 + 5] ^= 0xFF                       # inside the first batch's records: its CRC fails
    second.write_bytes(bytes(raw))
    before = files(data)
    with pytest.raises(CorruptDataError) as info:
        LogManager(str(data), overrides=COMPACT).compact()
    assert second.name in str(info.value)
    assert files(data) == before


@pytest.mark.parametrize("configs, name", [({"retention.ms": "1_000"}, "retention.ms"),
                                           ({"retention.bytes": "1e6"}, "retention.bytes"),
                                           ({"min.compaction.lag.ms": "5000",
                                             "max.compaction.lag.ms": "10"},
                                            "max.compaction.lag.ms")])
def test_values_java_would_refuse(data, configs, name):
    with pytest.raises(BadOptionError, match=name):
        LogManager(str(data), overrides=configs).retain()
