"""The process-wide caches that may hold words, ids or addresses of the workspace a process
served: the engine's stems of its words and tags, the standard library's parse cache of the
URLs its replica and store were reached by, and botocore's endpoint cache (keyed by each
request's bucket and object key, so by the workspace's id).

A workspace process is handed from one tenant to the next when a workspace hibernates, so
these are dropped before it serves another: a cache is speed, never a way for one tenant's
text or names to outlive its workspace's release.
"""

from __future__ import annotations

import sys
import urllib.parse
from typing import Any, cast

from minisphere.engine.retrieval.query_text import _porter
from minisphere.engine.retrieval.rerank import tag_stems


def _botocore_endpoint_cache() -> Any:
    """botocore's `lru_cache_weakref` keeps its functools cache in a closure and exposes only
    its statistics; None until botocore is in use (it is never imported for this)."""
    provider = sys.modules.get("botocore.endpoint_provider")
    if provider is None:
        return None
    method = provider.EndpointProvider.resolve_endpoint
    for cell in method.__closure__ or ():
        if hasattr(cell.cell_contents, "cache_clear"):
            return cell.cell_contents
    return None


def tenant_caches() -> list[Any]:
    """The functools caches that must be empty between tenants (the isolation audit reads
    their sizes)."""
    caches = [_porter, tag_stems, urllib.parse.urlsplit, _botocore_endpoint_cache()]
    return [cache for cache in caches if cache is not None]


def clear_tenant_caches() -> None:
    for cache in tenant_caches():
        cache.cache_clear()
    cast(Any, urllib.parse).clear_cache()  # undocumented, so not in the type stubs
