"""The Avro decoder without Spark: reading a writer schema alone and adding the reader's
defaults gives what fastavro's resolution gives, and a body that reads on into its neighbour
in the batch's buffer is still named for what it is."""

from __future__ import annotations

import copy
import json

import pyarrow as pa

from segmentlog_source.values.avro_values import defaults_only
from segmentlog_source.values.column_decoders import ConfluentColumn
from tests.values import avro_cases as case
from tests.values.logs import framed


def column(writers: dict) -> ConfluentColumn:
    texts = {i: json.dumps(s) for i, s in writers.items()}
    return ConfluentColumn("AVRO", case.V2_ID, texts[case.V2_ID], texts,
                           {i: "AVRO" for i in texts})


def test_the_defaults_shortcut_equals_resolution():
    payloads = pa.array([framed(case.V1_ID, case.V1, case.datum(i, 1)) for i in range(30)]
                        + [None, framed(case.V2_ID, case.V2, case.datum(3, 2))], pa.binary())
    fast = column({case.V1_ID: case.V1, case.V2_ID: case.V2})
    decoded, _ = fast.decode(payloads)
    assert fast.avro.defaults == {case.V1_ID: {"added": "fresh", "cnt": None}}
    slow = column({case.V1_ID: case.V1, case.V2_ID: case.V2})
    slow.avro.writer(case.V1_ID)
    slow.avro.defaults.clear()                 # fastavro's resolution for every row
    resolved, _ = slow.decode(payloads)
    assert decoded.errors == resolved.errors == [None] * 32
    assert decoded.array.equals(resolved.array)


def test_what_needs_resolution_gets_it():
    assert defaults_only(case.V1, case.V2) == {"added": "fresh", "cnt": None}
    changed = copy.deepcopy(case.V2)
    changed["fields"][1]["type"] = "long"                     # int -> long: a promotion
    renamed = copy.deepcopy(case.V2)
    renamed["fields"][-1]["aliases"] = ["old"]
    logical = copy.deepcopy(case.V1)
    logical["fields"].append({"name": "when", "type": {
        "type": "long", "logicalType": "timestamp-millis"}, "default": 0})
    no_default = copy.deepcopy(case.V1)
    no_default["fields"].append({"name": "must", "type": "int"})
    other_name = dict(copy.deepcopy(case.V2), name="Different")
    for reader in (changed, renamed, logical, no_default, other_name):
        assert defaults_only(case.V1, reader) is None


def test_short_bodies_in_a_shared_buffer_keep_their_reasons():
    good = framed(case.V1_ID, case.V1, case.datum(5, 1))
    cut = [good[:n] for n in range(5, len(good))]
    # each cut body is followed by a whole one: reading on would find bytes to decode
    payloads = pa.array([x for c in cut for x in (c, good)], pa.binary())
    decoded, ids = column({case.V1_ID: case.V1, case.V2_ID: case.V2}).decode(payloads)
    reasons = decoded.errors[0::2]
    assert all(r is not None and (r.startswith("truncated") or "not a value" in r)
               for r in reasons), reasons
    assert decoded.errors[1::2] == [None] * len(cut)
    assert decoded.array.null_count == len(cut)
