"""Runs the node's replication daemon for as long as the node's Ray runs, and no longer.

The daemon is started in a session of its own so that it outlives the workspace actor that
happened to start it; but a daemon that outlives the node's Ray (a `ray stop`, a killed raylet)
keeps every file it had registered, compacting and shipping them, while the workspace may have
moved to another node whose daemon ships to the same replica: two writers of one replica
history. So the daemon runs under this small process, tied to an owner (the node's raylet):

    python -m minisphere.durability.daemon_tether <owner pid> -- <daemon command...>

It starts the command as its child, which the kernel kills should the tether itself die
(`PR_SET_PDEATHSIG`); it stops the child (SIGTERM, then SIGKILL) once the owner is gone, and
forwards a SIGTERM it receives (the daemon's ordinary stop). Its exit status is the child's.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

OWNER_POLL_S = 0.5
CHILD_STOP_WAIT_S = 10.0
PR_SET_PDEATHSIG = 1


def owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    try:  # a zombie is gone for our purpose
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _stop(child: subprocess.Popen[bytes]) -> int:
    child.terminate()
    try:
        return child.wait(CHILD_STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        return child.wait()


def run(owner_pid: int, command: list[str]) -> int:
    child = subprocess.Popen(command, preexec_fn=_die_with_parent)
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    while True:
        code = child.poll()
        if code is not None:
            return code
        if stopping or not owner_alive(owner_pid):
            return _stop(child)
        time.sleep(OWNER_POLL_S)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: daemon_tether <owner pid> -- <command...>", file=sys.stderr)
        return 2
    return run(int(argv[0]), argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
