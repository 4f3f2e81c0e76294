#!/usr/bin/python3
"""A TCP listener that can be jammed, for the tcp check timeout test.

Usage: jammed_listener.py PORT STATE_DIR

Listens on 127.0.0.1:PORT with a backlog of 0 and accepts (and closes) connections while
STATE_DIR/jam does not exist. Once it exists, it stops accepting and fills its own accept queue
with connections it holds, then prints "jammed": the kernel now drops a new connection's SYN, so
a connect is neither accepted nor refused, it times out. When STATE_DIR/jam is removed, it lets
its connections go, accepts again and prints "unjammed".
"""
import os
import select
import socket
import sys

port, state = int(sys.argv[1]), sys.argv[2]
jam = os.path.join(state, "jam")

listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(0)
print(f"listening on {port}", flush=True)


def fill():
    """Connects until a connection is not completed: the queue is full then."""
    held = []
    while True:
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        held.append(c)
        _, writable, _ = select.select([], [c], [], 0.5)
        if not writable:
            return held


held = None
while True:
    if os.path.exists(jam):
        if held is None:
            held = fill()
            print(f"jammed ({len(held)} connections held)", flush=True)
        select.select([], [], [], 0.02)
        continue
    if held is not None:
        for c in held:
            c.close()
        held = None
        print("unjammed", flush=True)
    readable, _, _ = select.select([listener], [], [], 0.02)
    if readable:
        conn, _ = listener.accept()
        conn.close()
