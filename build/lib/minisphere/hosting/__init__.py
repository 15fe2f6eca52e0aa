"""Hosting: a workspace inside a long-lived process — `host.WorkspaceHost` (the file, its
snapshotter, restore and hibernation), `group_commit` (the one write path: one writer thread,
one transaction per batch) and `read_pool` (read-only connections beside it). Plain Python;
the workspace actor is a thin shell around a host."""
