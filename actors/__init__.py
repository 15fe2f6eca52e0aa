"""The Ray layer: thin shells around `minisphere`.

The four actors are the modules here — `workspace_actor` (one per workspace, the only owner of
its file), `directory_actor` (the control plane), `scheduled_tasks_actor` (APScheduler) and
`embedder_actor` (one shared model per provider). `parts/` holds what they are built from;
`ingress/` what a Ray Serve replica runs between HTTP and the actors.
"""
