"""Mini-Sphere: per-workspace memory for AI agents.

The subpackages are the layers (see the README's "Layout"): `engine` (one SQLite file, plain
Python), `transfer`, `hosting`, `durability`, `control`, `maintenance`, `contract`, `http`,
`client`, `cli`; `errors`, `settings` and `files` are shared by all. Nothing here imports Ray:
the Ray actors live in the top-level `actors/` package and the Serve app in `serve_app.py`.

`from minisphere import Workspace` (and the engine's clocks and errors) works as a shortcut; it
is resolved on first use, so importing e.g. `minisphere.client` loads no engine code.
"""
from __future__ import annotations

import importlib

_SHORTCUTS = {
    "Workspace": "minisphere.engine.workspace", "ManualClock": "minisphere.engine.clock",
    "SystemClock": "minisphere.engine.clock", "MiniSphereError": "minisphere.errors",
    "InvalidArgument": "minisphere.errors", "ContentTooLarge": "minisphere.errors",
    "NotFound": "minisphere.errors", "KindGateViolation": "minisphere.errors",
    "SelfLink": "minisphere.errors", "SchemaTooNew": "minisphere.errors",
    "WorkspaceClosed": "minisphere.errors",
}
__all__ = sorted(_SHORTCUTS)


def __getattr__(name: str):
    module = _SHORTCUTS.get(name)
    if module is None:
        raise AttributeError(f"module 'minisphere' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
