"""Moving a workspace in and out: JSONL export/import (ids, timestamps, tags, revisions and edges
kept exactly; resumable; duplicates skipped) and raw copies of the SQLite file.

- `import_file(workspace, path)` loads a file in batches of `IMPORT_BATCH_LINES`, each batch one
  transaction that also records the checkpoint (lines done) in `workspace_meta`, so an
  interrupted import resumes where it stopped. An entry whose id is already present, or whose
  content is an exact duplicate (same normalized-content hash) of a present entry, is skipped;
  edges of a skipped duplicate are re-pointed at the entry it duplicates; an edge already
  present is skipped.
- `export_lines` / `export_file` / `export_raw`: see `transfer/export.py`.
"""

from minisphere.transfer.export import export_file, export_lines, export_raw
from minisphere.transfer.importing import (
    CHECKPOINT_PREFIX,
    IMPORT_BATCH_LINES,
    ImportSession,
    import_file,
    import_lines,
)

__all__ = [
    "CHECKPOINT_PREFIX",
    "IMPORT_BATCH_LINES",
    "ImportSession",
    "export_file",
    "export_lines",
    "export_raw",
    "import_file",
    "import_lines",
]
