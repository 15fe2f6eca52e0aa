"""A workspace process's own memory: how much it holds (resident set, from /proc), and the
step that drops what a tenant may have left process-wide once its workspace is let go (the
caches that could hold its words or names, unreachable objects, and the C heap's free pages,
which glibc would otherwise keep, so a recycled process's size follows what it holds now)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
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


def settle_startup_heap() -> None:
    """Once, in a process that has served no one yet: move the objects of its imports and of
    Ray to the collector's permanent generation. The full collection at every release would
    otherwise walk the whole interpreter (~35 ms of CPU per hibernation); it then walks only
    what was made since, where every tenant's objects are. Frozen objects are still freed when
    no longer referenced; the isolation audit unfreezes them to look at them too."""
    gc.freeze()  # no collection first: it would take as long, on a wake that starts a process


def drop_process_wide_traces() -> None:
    clear_tenant_caches()
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        _libc().malloc_trim(0)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL("libc.so.6")  # a dlopen per release is not free
