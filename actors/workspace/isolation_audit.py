"""What a workspace process still holds of given strings: the check behind the promise that a
recycled process keeps nothing of the workspace it served before.

`retained(hex_needles)` looks for each needle (sent hex-encoded, so the request carrying them
holds no copy of them to be found) (a workspace id, a path, a line of its text) in every
string and bytes object reachable from the garbage collector's containers, in the engine's
process-wide caches (which must be empty between tenants) and among the files the process
has open. It answers where a needle was found (the kind of holder, never the text around it),
so it is safe to run on a process that serves another tenant now.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable
from pathlib import Path

from typing_extensions import TypedDict

from minisphere.hosting.tenant_caches import tenant_caches

HOLDERS_SHOWN = 5  # per needle: enough to say where to look


class Retained(TypedDict):
    objects: dict[str, list[str]]  # needle -> the kinds of object holding it
    files: list[str]  # open files whose path holds a needle
    cacheEntries: int  # entries left in the engine's process-wide caches


def _strings_in(obj: object) -> Iterable[str | bytes | bytearray]:
    if isinstance(obj, str | bytes | bytearray):
        yield obj
        return
    for referent in gc.get_referents(obj):
        if isinstance(referent, str | bytes | bytearray):
            yield referent


def retained(hex_needles: list[str]) -> Retained:
    """{"objects": {needle: [holder kinds]}, "files": [...], "cacheEntries": n}."""
    needles = [bytes.fromhex(h).decode() for h in hex_needles]
    encoded = [(needle, needle.encode()) for needle in needles]
    found: dict[str, list[str]] = {}
    # the audit's own holders of the needles are not the process's
    own = {id(needles), id(encoded), id(found), id(sys._getframe()), *map(id, encoded)}
    # objects frozen at the spare's start are not listed by get_objects(): a container among
    # them could hold a tenant's string, so the audit looks at them too (diagnostics only)
    gc.unfreeze()
    gc.collect()
    for holder in gc.get_objects():
        if id(holder) in own:
            continue
        for text in _strings_in(holder):
            for needle, raw in encoded:
                if (needle in text) if isinstance(text, str) else (raw in text):
                    kinds = found.setdefault(needle, [])
                    if len(kinds) < HOLDERS_SHOWN:
                        kinds.append(type(holder).__name__)
    files: list[str] = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if any(needle in target for needle in needles):
            files.append(target)
    return {
        "objects": found,
        "files": files,
        "cacheEntries": sum(cache.cache_info().currsize for cache in tenant_caches()),
    }
