"""The one I/O seam: every byte segmentlog reads or writes goes through a file system that
`filesystem_for` picks by path.

Local paths go to local.py's `LOCAL`; object stores and HDFS (through `pyarrow.fs`) are a second
implementation of the same small interface (object_store.py). Both count the bytes and requests
a read costs in an `IOStats` (stats.py).
"""

from __future__ import annotations

from .local import LOCAL
from .object_store import object_store_for
from .store_config import DEFAULT_CONFIG


def filesystem_for(path: str, config=None):
    """The file system that serves `path`, and the path as that file system names it.

    Local paths (plain or file://) go to LOCAL; URIs of object stores and HDFS to a
    `pyarrow.fs`-backed store (object_store.py), configured by `config` (a StoreConfig,
    from the `fs.*` options), which keeps the URI as the path.
    """
    if path.startswith("file://"):
        return LOCAL, path[len("file://"):]
    if "://" not in path:
        return LOCAL, path
    return object_store_for(path, config or DEFAULT_CONFIG), path.rstrip("/")
