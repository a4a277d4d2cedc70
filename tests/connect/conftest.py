"""One Spark Connect server for the tests of this package: PySpark's own server in a JVM process
of its own (segmentlog_source/devtools/connect_server.py), with this process as its client.

The client session lives for this package only: creating it marks the process as a Spark Connect
client (pyspark sets SPARK_CONNECT_MODE_ENABLED, and `pyspark.sql.functions` then builds Connect
columns), which the classic `spark` session of the other packages' tests must not see. The
teardown stops the session, takes the mark back and stops the server: no process outlives the
package (and the kernel kills the server if this process dies first).
"""

from __future__ import annotations

import os

import pytest

from segmentlog_source.devtools.connect_server import ConnectServer

CONNECT_MARKS = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")


@pytest.fixture(scope="package")
def connect_server(tmp_path_factory):
    with ConnectServer(tmp_path_factory.mktemp("connect-server")) as server:
        yield server


def client_session(server: ConnectServer):
    """A new client session on `server` (a session of its own on the server: its own
    registrations and temporary views)."""
    from pyspark.sql import SparkSession

    return SparkSession.builder.remote(server.url).create()


@pytest.fixture(scope="package")
def connect(connect_server):
    """The shared client session. Nothing registers segmentlog in it: the server found it."""
    before = {name: os.environ.get(name) for name in CONNECT_MARKS}
    session = client_session(connect_server)
    try:
        yield session
    finally:
        session.stop()
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
