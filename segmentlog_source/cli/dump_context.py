"""What one `segmentlog dump` run shares between the file handlers (dump_log.py,
dump_indexes.py): its options, where it writes, and the problems reported at the end."""

from __future__ import annotations

from dataclasses import dataclass, field
import json
from typing import Callable, TextIO

from ..errors import BadOptionError
from ..format.batch import INT32_MAX
from ..storage.log_files import offset_from_file_name
from ..storage.tiered.remote_names import split_segment_stem

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024


@dataclass(frozen=True)
class DumpOptions:
    deep_iteration: bool = False
    print_data_log: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT32_MAX
    skip_record_metadata: bool = False
    json: bool = False
    # The internal topic whose records keys and values are decoded as (--offsets-decoder:
    # __consumer_offsets, --transaction-log-decoder: __transaction_state,
    # --cluster-metadata-decoder: __cluster_metadata, --remote-log-metadata-decoder:
    # __remote_log_metadata, --share-group-state-decoder: __share_group_state), or None.
    decoder: str | None = None

    @property
    def prints_data(self) -> bool:
        # Kafka: a decoder implies --print-data-log.
        return self.print_data_log or self.decoder is not None

    @property
    def deep(self) -> bool:
        # Kafka: --print-data-log implies --deep-iteration.
        return self.deep_iteration or self.prints_data


@dataclass
class DumpProblems:
    """What Kafka prints on stderr after all files, keyed by the file's absolute path."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    files_dumped: int = 0   # files dumped (a directory or unknown file skipped is not)

    @staticmethod
    def add(group: dict, path: str, pair: tuple[int, int]) -> None:
        group.setdefault(path, []).append(pair)

    def write(self, err: TextIO) -> None:
        # DumpLogSegments 4.4 keeps index mismatches last-found first (it prepends to a list);
        # every other group keeps discovery order.
        for path, pairs in self.index_mismatches.items():
            err.write(f"Mismatches in :{path}\n")
            err.writelines(f"  Index offset: {i}, log offset: {o}\n" for i, o in reversed(pairs))
        for path, pairs in self.time_mismatches.items():
            err.write(f"Found timestamp mismatch in :{path}\n")
            err.writelines(f"  Index timestamp: {i}, log timestamp: {t}\n" for i, t in pairs)
        for path, pairs in self.time_out_of_order.items():
            err.write(f"Found out of order timestamp in :{path}\n")
            err.writelines(f"  Index timestamp: {i}, Previously indexed timestamp: {p}\n"
                           for i, p in pairs)
        for path, pairs in self.time_not_found.items():
            err.write(f"The following indexed offsets are not found in :{path}\n")
            err.writelines(f"Indexed offset: {i}, found log offset: {o}\n" for i, o in pairs)
        for path, pairs in self.non_consecutive.items():
            err.write(f"Non-consecutive offsets in {path}\n")
            err.writelines(f"  {a} is followed by {b}\n" for a, b in pairs)


class Dumper:
    """The output of a dump: lines (or JSON objects) on `out`, Kafka's problem report on `err`;
    `progress` is told the bytes of each batch or file done (a progress bar, or nothing)."""

    def __init__(self, options: DumpOptions, out: TextIO, err: TextIO, config=None,
                 progress: Callable[[int], None] | None = None):
        self.options = options
        self.config = config  # a StoreConfig for URIs (None: the stores' own defaults)
        self.out = out
        self.err = err
        self.problems = DumpProblems()
        self._progress = progress
        self.done = 0   # bytes of the files dumped so far
        self.dumped = 0  # files dumped (or begun), not skipped

    def advance(self, nbytes: int) -> None:
        self.done += nbytes
        if self._progress is not None:
            self._progress(nbytes)

    def line(self, text: str) -> None:
        if not self.options.json:
            self.out.write(text + "\n")

    def obj(self, kind: str, **fields) -> None:
        if self.options.json:
            self.out.write(json.dumps({"kind": kind, **fields}, ensure_ascii=False) + "\n")

    def base_offset_of(self, fs, shown: str) -> int:
        """The segment base offset a file name starts with (Kafka: name.split('.')(0).toLong)."""
        name = fs.basename(shown)
        offset = offset_from_file_name(name)
        copy = split_segment_stem(name.split(".", 1)[0])
        if offset is None and copy is not None:
            offset = copy[0]        # a remote tier's copy, <base offset>-<segment id>.log
        if offset is None:
            raise BadOptionError("--files", shown, "a segment file name must start with the "
                                 "segment's base offset, e.g. 00000000000000000000.log")
        return offset

    def finish(self) -> None:
        self.problems.write(self.err)


