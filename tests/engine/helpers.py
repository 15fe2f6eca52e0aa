"""Helpers of the engine tests: a full-database snapshot, FTS probes, and one API that reaches
every method either through `Workspace.call(name, camelCaseBody)` or through the snake_case
Python wrappers. (A plain module, not conftest, so test files can import it by name.)"""

from __future__ import annotations

from pydantic.alias_generators import to_camel


def snapshot(ws) -> dict:
    """Every schema object and every row of every real table (FTS shadow tables included).

    The external-content FTS virtual table is skipped (it reads through to `entries`); its
    shadow tables `entries_fts_*` hold the index itself and are compared row by row.
    """
    conn = ws.conn
    schema = sorted(
        conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall(), key=repr
    )
    tables = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    rows = {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}
    return {"schema": schema, "rows": rows}


def fts_ids(ws, term: str) -> list[str]:
    """Ids of entries whose FTS row matches `term` (a plain phrase)."""
    phrase = '"' + term.replace('"', '""') + '"'
    return [
        r[0]
        for r in ws.conn.execute(
            "SELECT e.id FROM entries_fts f JOIN entries e ON e.seq = f.rowid "
            "WHERE entries_fts MATCH ? ORDER BY e.seq",
            (phrase,),
        )
    ]


def fts_rowcount(ws, term: str) -> int:
    """Rows of the FTS index itself matching `term` (no join: catches orphaned index rows)."""
    phrase = '"' + term.replace('"', '""') + '"'
    return ws.conn.execute(
        "SELECT COUNT(*) FROM entries_fts WHERE entries_fts MATCH ?", (phrase,)
    ).fetchone()[0]


class Api:
    """Same operations, two doors: `via="call"` (contract names, camelCase JSON bodies) or
    `via="wrapper"` (snake_case methods and keyword options)."""

    def __init__(self, ws, via: str):
        self.ws, self.via = ws, via

    def _call(self, method: str, body: dict):
        return self.ws.call(method, {to_camel(k): v for k, v in body.items()})

    def capture(self, content, **opts):
        if self.via == "call":
            return self._call("capture", {"content": content, **opts})
        return self.ws.capture(content, **opts)

    def append(self, id, addition, **opts):
        if self.via == "call":
            return self._call("append", {"id": id, "addition": addition, **opts})
        return self.ws.append(id, addition, **opts)

    def update(self, id, content):
        if self.via == "call":
            return self._call("update", {"id": id, "content": content})
        return self.ws.update(id, content)

    def set_status(self, id, status):
        if self.via == "call":
            return self._call("setStatus", {"id": id, "status": status})
        return self.ws.set_status(id, status)

    def forget(self, id):
        if self.via == "call":
            return self._call("forget", {"id": id})
        return self.ws.forget(id)

    def link(self, src, dst, type, **opts):
        if self.via == "call":
            return self._call("link", {"src": src, "dst": dst, "type": type, **opts})
        return self.ws.link(src, dst, type, **opts)

    def unlink(self, src, dst, type):
        if self.via == "call":
            return self._call("unlink", {"src": src, "dst": dst, "type": type})
        return self.ws.unlink(src, dst, type)

    def get_entry(self, id):
        if self.via == "call":
            return self._call("getEntry", {"id": id})
        return self.ws.get_entry(id)

    def list_recent(self, **opts):
        if self.via == "call":
            return self._call("listRecent", opts)
        return self.ws.list_recent(**opts)

    def connections(self, id):
        if self.via == "call":
            return self._call("connections", {"id": id})
        return self.ws.connections(id)

    def graph_view(self, seed_ids, **opts):
        if self.via == "call":
            return self._call("graphView", {"seed_ids": seed_ids, **opts})
        return self.ws.graph_view(seed_ids, **opts)

    def get_tags(self, **opts):
        return self.ws.call("getTags", opts) if self.via == "call" else self.ws.get_tags(**opts)

    def get_count(self):
        return self.ws.call("getCount", {}) if self.via == "call" else self.ws.get_count()

    def get_stats(self):
        return self.ws.call("getStats", {}) if self.via == "call" else self.ws.get_stats()

    def get_brief(self):
        return self.ws.call("getBrief", {}) if self.via == "call" else self.ws.get_brief()
