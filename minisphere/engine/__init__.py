"""The engine: one workspace = one SQLite file (FTS5 + graph, optional sqlite-vec vectors).

Plain Python: it imports nothing of Ray, FastAPI, Starlette, httpx, boto3 or APScheduler (an
import-linter contract in pyproject.toml holds it to that), so it can be embedded and tested
on its own. `workspace.Workspace` is the facade; `methods` is the contract's method table;
`hooks` is the interface an optional binding implements.
"""
