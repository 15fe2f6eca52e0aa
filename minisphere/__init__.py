"""Mini-Sphere: per-workspace memory for AI agents.

The subpackages are the layers (see docs/architecture/index.md): `engine` (one SQLite file, plain
Python), `transfer`, `hosting`, `durability`, `control`, `maintenance`, `contract`, `http`,
`client`, `cli`; `errors`, `settings` and `files` are shared by all. Nothing here imports Ray:
the Ray actors live in the top-level `actors/` package and the Serve app in `serve_app.py`.

This package re-exports nothing, so importing one layer (e.g. `minisphere.client`) loads no
other: import each name from its module (`from minisphere.engine.workspace import Workspace`,
`from minisphere.errors import NotFound`).
"""
