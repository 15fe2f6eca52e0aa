"""The Ray layer: thin shells around `minisphere`, one package per actor.

Each package holds its actor (`actor.py`) and the parts only it uses: `workspace/` (one actor
per workspace, the only owner of its file; also the launch the directory binds it with),
`directory/` (the control plane), `scheduler/` (APScheduler's scheduled tasks), `embedder/` (one
shared model per provider) and `ingress/` (what a Ray Serve replica runs between HTTP and the
actors). Shared by several callers: `workspace_reach.py`, the one way to reach a workspace's
actor and follow it through hibernation and crashes, and `in_cluster.py`, the client other Ray
code uses to call workspaces without HTTP.
"""
