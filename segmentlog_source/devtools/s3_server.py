"""A real S3-compatible server on loopback, for tests, benchmarks and demos.

moto's standalone server runs as a child process; in front of it sits a small counting proxy
that every read goes through, so a test can check what a query really cost (requests and bytes
served, as the server saw them, not as segmentlog believes) and make chosen requests fail
(throttling, 5xx, access denied), the way a real store sometimes does.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pyarrow.fs as pafs

ACCESS_KEY, SECRET_KEY, REGION = "segmentlog-test", "segmentlog-test-secret", "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Request:
    """One request the proxy passed on (or failed on purpose)."""

    method: str
    key: str          # "bucket/key" (URL-decoded, no query)
    query: str
    status: int
    body_bytes: int   # bytes of the response body sent to the client


@dataclass
class Fault:
    """Answer matching requests with an S3 error instead of passing them on."""

    method: str
    key_pattern: str
    status: int
    code: str
    times: int | None = None    # None: every matching request
    hits: int = 0

    def matches(self, method: str, key: str) -> bool:
        return (self.method in ("*", method) and re.search(self.key_pattern, key) is not None
                and (self.times is None or self.hits < self.times))


@dataclass
class _State:
    upstream: tuple[str, int]
    requests: list[Request] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The headers and the body go out in two writes: with Nagle's algorithm on, the body of a
    # small response waits for the client's delayed ACK (~40 ms on Linux), so every small ranged
    # read cost 40 ms more than moto takes to serve it.
    disable_nagle_algorithm = True
    state: _State   # set on the per-server subclass

    def log_message(self, *args):   # quiet: the request list is the log
        pass

    def _forward(self) -> None:
        parts = urlsplit(self.path)
        key = unquote(parts.path.lstrip("/"))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        with self.state.lock:
            fault = next((f for f in self.state.faults if f.matches(self.command, key)), None)
            if fault is not None:
                fault.hits += 1
        if fault is not None:
            payload = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{fault.code}</Code>'
                       f'<Message>injected by the test server</Message></Error>').encode()
            payload = b"" if self.command == "HEAD" else payload
            self._record(key, parts.query, fault.status, len(payload))
            self.send_response(fault.status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        conn = http.client.HTTPConnection(*self.state.upstream, timeout=120)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        # (recorded before the client can have its answer: recorded after, a test that counts
        # from a reset made once the answer is in sees the request land in its count)
        self._record(key, parts.query, resp.status, len(data))
        self.send_response(resp.status)
        for name, value in resp.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data) if self.command != "HEAD"
                                               else resp.getheader("Content-Length", "0")))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _record(self, key: str, query: str, status: int, nbytes: int) -> None:
        with self.state.lock:
            self.state.requests.append(Request(self.command, key, query, status, nbytes))

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward


class S3Server:
    """moto on loopback behind a counting, fault-injecting proxy. Use as a context manager."""

    def __init__(self, log_dir: str | os.PathLike | None = None):
        self._log_dir = Path(log_dir) if log_dir else None
        self._moto: subprocess.Popen | None = None
        self._proxy: ThreadingHTTPServer | None = None

    # -- life cycle ----------------------------------------------------------------------------
    def __enter__(self) -> "S3Server":
        moto_port = free_port()
        log = open(self._log_dir / "moto.log", "wb") if self._log_dir else subprocess.DEVNULL
        self._moto = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)],
            stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                 "AWS_SECRET_ACCESS_KEY": SECRET_KEY})
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", moto_port), timeout=1).close()
                break
            except OSError:
                if self._moto.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError("moto's S3 server did not start (is moto[server] "
                                       "installed in this environment?)") from None
                time.sleep(0.1)
        self.state = _State(("127.0.0.1", moto_port))
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._proxy.daemon_threads = True
        threading.Thread(target=self._proxy.serve_forever, daemon=True).start()
        self.moto_endpoint = f"http://127.0.0.1:{moto_port}"
        self.endpoint = f"http://127.0.0.1:{self._proxy.server_address[1]}"
        return self

    def __exit__(self, *exc) -> None:
        if self._proxy is not None:
            self._proxy.shutdown()
            self._proxy.server_close()
            self._proxy = None
        if self._moto is not None:
            self._moto.terminate()
            try:
                self._moto.wait(10)
            except subprocess.TimeoutExpired:
                self._moto.kill()
                self._moto.wait()
            self._moto = None

    # -- what clients need -----------------------------------------------------------------------
    @property
    def storage_options(self) -> dict[str, str]:
        """The reader options that reach this server (through the counting proxy)."""
        return {"fs.s3.endpoint": self.endpoint, "fs.s3.region": REGION,
                "fs.s3.access.key": ACCESS_KEY, "fs.s3.secret.key": SECRET_KEY}

    def direct_filesystem(self) -> pafs.S3FileSystem:
        """A pyarrow client straight to moto (for uploads: they are not what is measured)."""
        host = self.moto_endpoint.split("://", 1)[1]
        return pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION,
                                 endpoint_override=host, scheme="http",
                                 allow_bucket_creation=True)

    def create_bucket(self, name: str) -> None:
        self.direct_filesystem().create_dir(name)

    def upload_tree(self, local_dir: str | os.PathLike, uri: str) -> None:
        """Copy a local directory tree to `s3://bucket/prefix` (the bucket must exist)."""
        target = uri.split("://", 1)[1].rstrip("/")
        pafs.copy_files(str(local_dir), target, source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=self.direct_filesystem())

    # -- measuring and breaking ----------------------------------------------------------------
    def reset_counts(self) -> None:
        with self.state.lock:
            self.state.requests.clear()

    def requests(self) -> list[Request]:
        with self.state.lock:
            return list(self.state.requests)

    def fail(self, method: str, key_pattern: str, status: int, code: str,
             times: int | None = None) -> Fault:
        """Make the next `times` (None: all) matching requests fail with an S3 error."""
        fault = Fault(method, key_pattern, status, code, times)
        with self.state.lock:
            self.state.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self.state.lock:
            self.state.faults.clear()
