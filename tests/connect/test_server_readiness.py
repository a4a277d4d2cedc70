"""devtools/connect_server.py: a server is ready when its own socket listens on its port, not
when any process does; a port taken before the server bound it is retried once elsewhere. The
server here is a fake (a Python process), so no Spark is started."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from segmentlog_source.devtools.connect_server import ConnectServer, listener_of
from segmentlog_source.devtools.local_cluster import HOST

# Listens on argv[1] (prints "listening" once it does), or says what a JVM says and exits.
FAKE_SERVER = """
import socket, sys, time
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    print(f"java.io.IOException: Failed to bind to address /127.0.0.1:{sys.argv[1]}")
    print("Caused by: java.net.BindException: Address already in use")
    sys.exit(1)
s.listen()
print("listening", flush=True)
time.sleep(600)
"""


def _taken_port():
    thief = socket.socket()
    thief.bind((HOST, 0))
    thief.listen()
    return thief, thief.getsockname()[1]


def test_a_listener_of_another_process_is_not_the_servers():
    thief, port = _taken_port()
    with thief, subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) as other:
        try:
            assert listener_of(other.pid, port) is False     # it is this process's socket
            assert listener_of(os.getpid(), port) is True
        finally:
            other.kill()


def test_the_servers_own_listener_is_found():
    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]
    with subprocess.Popen([sys.executable, "-c", FAKE_SERVER, str(port)],
                          stdout=subprocess.PIPE, text=True) as fake:
        try:
            assert fake.stdout.readline().strip() == "listening"
            assert listener_of(fake.pid, port) is True
        finally:
            fake.kill()


class FakeServer(ConnectServer):
    def _command(self):
        return [sys.executable, "-c", FAKE_SERVER, str(self.port)], None


def test_a_port_taken_before_the_server_bound_it_is_retried_elsewhere(tmp_path):
    thief, port = _taken_port()
    with thief:
        server = FakeServer(tmp_path, timeout=120)
        server.port, server.url = port, f"sc://{HOST}:{port}"
        with server:
            assert server.port != port
            assert server.url == f"sc://{HOST}:{server.port}"
            assert listener_of(server.pid, server.port) is True
            assert "listening" in server.log_file.read_text()
        assert server.pid is None       # stopped
