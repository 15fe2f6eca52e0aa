"""Mini-Sphere engine: per-workspace memory on SQLite (FTS5 + graph), no Ray import."""
from .clock import ManualClock, SystemClock
from .errors import (ContentTooLarge, InvalidArgument, KindGateViolation, MiniSphereError,
                     NotFound, SchemaTooNew, SelfLink, WorkspaceClosed)
from .workspace import Workspace

__all__ = ["Workspace", "ManualClock", "SystemClock", "MiniSphereError", "InvalidArgument",
           "ContentTooLarge", "NotFound", "KindGateViolation", "SelfLink", "SchemaTooNew",
           "WorkspaceClosed"]
