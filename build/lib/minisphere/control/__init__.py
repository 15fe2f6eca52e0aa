"""The control plane: the directory's own SQLite store of workspaces, tokens and audit
(`plane`), blueprints, workspace ids and tokens (`auth`) and the residency policy. Plain
Python; the directory actor owns the one instance."""
