"""A workspace process's own memory: how much it holds (resident set, from /proc), and the
step that drops what a tenant may have left process-wide once its workspace is let go (the
caches that could hold its words or names, unreachable objects, and the C heap's free pages,
which glibc would otherwise keep, so a recycled process's size follows what it holds now)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
from pathlib import Path

from minisphere.hosting.tenant_caches import clear_tenant_caches


def rss_bytes(pid: int | str = "self") -> int:
    """Resident memory of a process (this one by default), 0 where /proc cannot tell."""
    try:
        with Path(f"/proc/{pid}/status").open(encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def drop_process_wide_traces() -> None:
    clear_tenant_caches()
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
