"""One InputPartition of a batch read or a streaming micro-batch, and what an executor does
with it: scan its group of byte ranges (spark/reader.py) into Arrow batches, completing the
storage layer's errors with what to do."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from ..errors import CorruptDataError, FileChangedError, SegmentLogError
from ..plan.options import ReadOptions
from ..plan.predicates import fold
from ..plan.read_plan import ReadGroup
from ..plan.view_plan import SegmentRef
from .error_lines import raised_alone
from .metadata_views import BatchesScan, SegmentsScan
from .reader import GroupScan, ScanSettings
from .worker_logs import info_to_worker_logs

SKIP_HINT = "failOnDataLoss=false reads what is readable around it"


@dataclass(frozen=True)
class SegmentLogInputPartition(InputPartition):
    group: ReadGroup


@dataclass(frozen=True)
class SegmentsInputPartition(InputPartition):
    """A task of the segments view: segment files, one row each."""

    segments: tuple[SegmentRef, ...]


def with_hint(err: Exception, fail_on_data_loss: bool) -> Exception:
    """`err` completed with what to do, where segmentlog knows it."""
    if isinstance(err, FileChangedError) or not isinstance(err, CorruptDataError) \
            or err.hint is not None:     # (what to do is already said, e.g. the metadata's)
        return err
    return err.hinted(SKIP_HINT) if fail_on_data_loss else err


def scan_partition(partition, opts: ReadOptions, predicates: tuple = (), decoding=None,
                   projection=None):
    """The Arrow batches of one InputPartition (`predicates`: WHERE clauses pushed down;
    `decoding`: the values/ decoders adding key_decoded/value_decoded, or None; `projection`:
    the view's columns a user's schema names, or None)."""
    info_to_worker_logs()   # (each task's line of what it read: worker_logs.py)
    group = getattr(partition, "group", None)
    segments = getattr(partition, "segments", None)
    if group is None and segments is None:
        return iter(())   # Spark's stand-in InputPartition(None) for an empty plan
    # A remote copy whose chunks nothing but the batches' CRCs checks (Aiven's zstd without
    # encryption) is read with them checked, whatever verifyChecksums says.
    verify = opts.verify_checksums or any(t.needs_crc_check for t in getattr(group, "tasks", ()))
    settings = ScanSettings(fold(list(predicates)), opts.read_committed, verify,
                            opts.include_payload, opts.include_headers, opts.fail_on_data_loss,
                            opts.store, decoding, projection)
    if segments is not None:
        scan = SegmentsScan(segments, settings)
    elif opts.view == "batches":
        scan = BatchesScan(group, settings)
    else:
        scan = GroupScan(group, settings)
    return _scan(scan, opts.fail_on_data_loss)


def _scan(scan: GroupScan, fail_on_data_loss: bool):
    # PySpark's worker keeps the first batch a reader yields alive for the whole task
    # (records_to_arrow_batches' first_element): make it an empty one, so no decoded data
    # is pinned (a batch can hold hundreds of MB of decompressed values).
    yield _empty_batch(scan.schema)
    try:
        yield from scan
    except CorruptDataError as err:
        raise raised_alone(with_hint(err, fail_on_data_loss)) from None
    except SegmentLogError as err:   # (without its traceback: error_lines.py)
        raise raised_alone(err) from None


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)
