"""The README's first example: create a workspace, capture two entries, recall one with the
score breakdown that says why it ranked where it did.

    minisphere serve                    # in another terminal, from the same folder
    python docs/examples/quickstart.py  # reads the admin token minisphere serve keeps in ./data

The test calls `main` with an admin client of its own.
"""

from __future__ import annotations

from pathlib import Path

from minisphere.client import Client

ADMIN_TOKEN_FILE = Path("data/.admin_token")  # where `minisphere serve` keeps it


def main(admin: Client) -> dict:
    # --8<-- [start:example]
    notes = admin.workspace("notes", admin.create_workspace("notes").token)
    notes.capture("We chose SQLite per workspace: one file each, easy to move", tags=["design"])
    notes.capture("Postgres stays the system of record for billing", tags=["db"])
    best = notes.recall("why sqlite?", top_k=3).items[0]
    print(best.content, round(best.score, 3))
    for factor, value in best.breakdown.items():  # keyword, graph, fused, decay, ..., final
        print(f"  {factor}: {value}")
    # --8<-- [end:example]
    return {"best": best, "workspace": notes}


if __name__ == "__main__":
    with Client(
        "http://127.0.0.1:8000", admin_token=ADMIN_TOKEN_FILE.read_text(encoding="utf-8").strip()
    ) as client:
        main(client)
