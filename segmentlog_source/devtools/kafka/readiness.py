"""Free loopback ports, and the broker's "ready" answer: a Metadata request (v4, all topics) sent
over a plain socket, so no Kafka client library is needed to know the broker serves.

The broker's listener opens only after its logs are loaded and it is unfenced; the Metadata
answer then confirms that it lists itself and knows its controller. (Versions 0-3 of the
request were removed in Kafka 4.0, KIP-896, so v4 is the oldest a 4.x broker answers.)
"""

from __future__ import annotations

import socket
import struct

HOST = "127.0.0.1"
_API_METADATA, _VERSION, _CORRELATION = 3, 4, 7
_CLIENT_ID = b"segmentlog-tests"


def free_ports(n: int) -> list[int]:
    """`n` distinct ports free on 127.0.0.1 now (held together while choosing, then released;
    another process could still take one before the broker binds it)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def metadata(port: int, timeout: float = 2.0) -> dict:
    """{"brokers": [(node_id, host, port, rack)], "cluster_id", "controller_id"} from the broker
    on `port`. Raises OSError (or struct.error) when it does not answer properly."""
    request = (struct.pack(">hhih", _API_METADATA, _VERSION, _CORRELATION, len(_CLIENT_ID))
               + _CLIENT_ID + struct.pack(">ib", -1, 0))   # all topics, no auto-creation
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", _read(s, 4))
        return _parse(_read(s, size))


def _read(s: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return bytes(data)


def _parse(data: bytes) -> dict:
    pos = 0

    def take(fmt: str):
        nonlocal pos
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value

    def string() -> str | None:
        nonlocal pos
        n = take(">h")
        if n < 0:
            return None
        pos += n
        return data[pos - n:pos].decode("utf-8")

    if take(">i") != _CORRELATION:
        raise ConnectionError("a Metadata answer with the wrong correlation id")
    take(">i")  # throttle time
    brokers = [(take(">i"), string(), take(">i"), string()) for _ in range(take(">i"))]
    cluster_id = string()
    return {"brokers": brokers, "cluster_id": cluster_id, "controller_id": take(">i")}
