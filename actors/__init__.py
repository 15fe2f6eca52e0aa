"""The Ray layer: thin shells around `minisphere`.

The four actors are the modules here — `workspace_actor` (one per workspace, the only owner of
its file), `directory_actor` (the control plane), `scheduled_tasks_actor` (APScheduler) and
`embedder_actor` (one shared model per provider). `parts/` holds what they are built from;
`ingress/` what a Ray Serve replica runs between HTTP and the actors.
"""
import os

# Pydantic looks for plugins the first time it builds a validator in a process, by reading the
# entry points of every installed distribution: about 9 ms here (some 230 distributions). The
# argument models build on first use, so a workspace actor paid that inside the first call
# after its wake. The service uses no pydantic plugin; an operator who wants one sets
# PYDANTIC_DISABLE_PLUGINS themselves (empty: none disabled) and that choice is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
