"""Starts a ConnectServer, prints its pid, and waits to be killed (test_connect_server.py)."""

import sys
import time

from segmentlog_source.devtools.connect_server import ConnectServer

server = ConnectServer(sys.argv[1])
server.start()
print("server", server.pid, flush=True)
time.sleep(600)
