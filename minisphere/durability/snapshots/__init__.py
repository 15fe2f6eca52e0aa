"""Consistent, compressed, checksummed, versioned snapshots of one workspace file.

A snapshot is taken with `VACUUM INTO` from a separate read-only connection (one consistent
read transaction; WAL lets writers go on meanwhile). Unlike a page-by-page copy it rebuilds
the file, so the copy carries no free pages: text that `forget` removed is not in a snapshot
taken after the forget (the write connection's secure_delete also zeroes the live file's freed
pages). The copy is a single self-contained file (journal_mode=DELETE), gzip-compressed and
uploaded as

    <workspace>/<version>.db.gz      the compressed file
    <workspace>/<version>.json       its manifest, written last (a version exists once it does)

where `version` is `<UTC yyyymmddThhmmssmmmZ>-<seq:06d>` and `seq` grows by one per snapshot of
the workspace. The manifest holds sizes and SHA-256 of both the compressed and the raw bytes,
the schema version and the entry count.

- `layout`: version names and the store keys of a workspace's versions;
- `manifest`: what a manifest must hold (a pydantic model), reading and listing manifests;
- `packing`: the consistent, compacted copy of the live file and its compression;
- `publish`: taking a snapshot and storing a file as the next version;
- `pruning`: deleting old versions, or all of a workspace's.

Restoring a version is `durability/restores.py`. The package re-exports `list_snapshots`, which
the ingress imports from it.
"""

from minisphere.durability.snapshots.manifest import list_snapshots

__all__ = ["list_snapshots"]
