"""The Ray layer: thin shells around `minisphere`.

The four actors are the modules here — `workspace_actor` (one per workspace, the only owner of
its file), `directory_actor` (the control plane), `scheduled_tasks_actor` (APScheduler) and
`embedder_actor` (one shared model per provider). `parts/` holds what they are built from;
`ingress/` what a Ray Serve replica runs between HTTP and the actors.
"""
import os

# Pydantic looks for plugins the first time it builds a validator in a process, by reading the
# entry points of every installed distribution. The argument models build on first use, so that
# scan would land inside a woken workspace actor's first call. The service uses no pydantic
# plugin; an operator who wants one sets PYDANTIC_DISABLE_PLUGINS themselves (empty: none
# disabled) and that choice is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
