#!/usr/bin/python3
"""Speaks systemd's sd_notify protocol, for the notify tests.

Usage: notifier.py SCRIPT_FILE

Reads commands from SCRIPT_FILE's lines as they are appended (it is polled), one per line:
  send TEXT          send TEXT (\\n escapes become newlines) from this process
  child TEXT         send TEXT from a forked child (a descendant)
  orphan TEXT        send TEXT from a double-forked grandchild (reparented away from us)
  fork-main          fork a child that sleeps, and send MAINPID=<its pid>
  env                print NOTIFY_SOCKET and WATCHDOG_USEC
  watchdog on|off    send WATCHDOG=1 every 0.1 s from now on (the first at once), or stop
  on-term SECS TEXT  on SIGTERM: print "got TERM", send TEXT, and exit 0 SECS seconds after
                     the signal came (printing "exiting after TERM")
  on-usr1 TEXT       on SIGUSR1: print "got USR1" and send TEXT
  exit N             exit with status N
Each command is acknowledged by a line "done N" on stdout (N = the line number).
"""
import os
import signal
import socket
import sys
import time

PING_EVERY = 0.1


def send(text):
    """Sends TEXT, then waits as libsystemd's sd_notify_barrier() does: a BARRIER=1 datagram
    carries a pipe's write end, which the supervisor closes once it has read everything sent
    before it. (A sender that exits at once cannot be attributed once it is gone.)"""
    addr = os.environ["NOTIFY_SOCKET"]
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(text.encode(), addr)
    r, w = os.pipe()
    s.sendmsg([b"BARRIER=1"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(bytearray(w.to_bytes(4, sys.byteorder)))))], 0, addr)
    os.close(w)
    os.read(r, 1)  # EOF once the supervisor closed its copy
    os.close(r)
    s.close()


def ping():
    """One WATCHDOG=1, without a barrier: a ping needs no answer, and the sender stays."""
    addr = os.environ["NOTIFY_SOCKET"]
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"WATCHDOG=1", addr)
    s.close()


def main():
    path = sys.argv[1]
    done = 0
    pinging = False
    next_ping = 0.0
    term = {}  # what on-term set: "secs", "text"; "at" once the signal came

    def on_term(signum, frame):
        term["at"] = time.monotonic()
        print("got TERM", flush=True)
        send(term["text"])

    def on_usr1(signum, frame):
        print("got USR1", flush=True)
        send(usr1_text)

    usr1_text = ""
    while True:
        if "at" in term and time.monotonic() - term["at"] >= term["secs"]:
            print("exiting after TERM", flush=True)
            sys.exit(0)
        if pinging and time.monotonic() >= next_ping:
            ping()
            next_ping = time.monotonic() + PING_EVERY
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        for line in lines[done:]:
            done += 1
            cmd, _, arg = line.partition(" ")
            arg = arg.replace("\\n", "\n")
            if cmd == "send":
                send(arg)
            elif cmd == "child":
                pid = os.fork()
                if pid == 0:
                    send(arg)
                    os._exit(0)
                os.waitpid(pid, 0)
            elif cmd == "orphan":
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    if os.fork() == 0:
                        os.read(r, 1)  # wait until our parent is gone
                        send(arg)
                        os._exit(0)
                    os._exit(0)
                os.waitpid(pid, 0)
                os.write(w, b"x")
                time.sleep(0.2)
            elif cmd == "fork-main":
                pid = os.fork()
                if pid == 0:
                    while True:
                        time.sleep(1)
                send(f"MAINPID={pid}")
            elif cmd == "env":
                print("NOTIFY_SOCKET=" + os.environ.get("NOTIFY_SOCKET", ""), flush=True)
                print("WATCHDOG_USEC=" + os.environ.get("WATCHDOG_USEC", ""), flush=True)
            elif cmd == "watchdog":
                pinging = arg == "on"
                next_ping = 0.0
            elif cmd == "on-term":
                secs, _, text = arg.partition(" ")
                term.update(secs=float(secs), text=text)
                signal.signal(signal.SIGTERM, on_term)
            elif cmd == "on-usr1":
                usr1_text = arg
                signal.signal(signal.SIGUSR1, on_usr1)
            elif cmd == "exit":
                print(f"done {done}", flush=True)
                sys.exit(int(arg))
            print(f"done {done}", flush=True)
        time.sleep(0.02)


main()
