"""`minisphere export` / `minisphere import` through the running service (admin routes
`GET .../export` and `POST .../import`), against the real app served by uvicorn over real
engine files: a round trip into another workspace, resuming, duplicates, and bad input."""

from __future__ import annotations

import json

from tests.support.tcp_relay import free_port


def report_of(err: str) -> dict:
    """The import's report: the last stderr line, `import <ws>: {json}`."""
    return json.loads(err.strip().splitlines()[-1].split(": ", 1)[1])


def seed(cli) -> list[str]:
    token = json.loads(cli("ws", "create", "source").out)["token"]
    ws = ("-w", "source", "--token", token)
    first = json.loads(cli("capture", "exported through the service 東京", "--tag", "x", *ws).out)[
        "id"
    ]
    second = json.loads(cli("capture", "and an episode", "--kind", "episodic", *ws).out)["id"]
    assert cli("link", second, first, "caused_by", *ws).code == 0
    assert cli("append", first, "with a revision", *ws).code == 0
    return [first, second]


def test_export_and_import_through_the_service_round_trip(service, cli, tmp_path):
    ids = seed(cli)
    out = tmp_path / "source.jsonl"
    exported = cli("export", "source", "-o", str(out))
    assert exported.code == 0 and f"4 lines -> {out}" in exported.err
    lines = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["counts"]["entries"] == 2
    assert {json.loads(line).get("id") for line in lines[1:3]} == set(ids)

    assert cli("ws", "create", "copy").code == 0
    imported = cli("import", "copy", str(out), "--batch", "1")  # one request per line
    assert imported.code == 0
    report = report_of(imported.err)
    assert (report["entries"], report["edges"], report["complete"]) == (2, 1, True)
    copied = tmp_path / "copy.jsonl"
    assert cli("export", "copy", "-o", str(copied)).code == 0
    assert copied.read_text(encoding="utf-8").splitlines()[1:] == lines[1:]

    again = cli("import", "copy", str(out))  # nothing new: duplicates
    assert again.code == 0 and report_of(again.err)["duplicateIds"] == 2
    assert json.loads(cli("count", "-w", "copy").out) == {"count": 2}


def test_export_to_stdout_writes_only_the_jsonl(service, cli):
    seed(cli)
    exported = cli("export", "source")
    assert exported.code == 0
    records = [json.loads(line)["record"] for line in exported.out.splitlines()]
    assert records == ["header", "entry", "entry", "edge"]


def test_transfer_through_the_service_reports_bad_input_clearly(service, cli, tmp_path):
    seed(cli)
    out = tmp_path / "source.jsonl"
    assert cli("export", "source", "-o", str(out)).code == 0
    missing = cli("export", "nowhere", "-o", str(tmp_path / "x.jsonl"))
    assert missing.code == 1 and missing.err.startswith("error: 404 not_found")
    into_missing = cli("import", "nowhere", str(out))
    assert into_missing.code == 1 and "404 not_found" in into_missing.err

    assert cli("ws", "create", "target").code == 0
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text(
        "\n".join(out.read_text(encoding="utf-8").splitlines()[:2]) + "\n", encoding="utf-8"
    )
    cut = cli("import", "target", str(truncated))
    assert cut.code == 1 and "looks truncated" in cut.err
    assert json.loads(cli("count", "-w", "target").out) == {"count": 1}  # what it held

    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"record": "header"}\nnot json at all\n', encoding="utf-8")
    refused = cli("import", "target", str(garbage))
    assert refused.code == 1
    assert "error: 422 import_format: line 1: not a minisphere-jsonl export" in refused.err
    unreachable = cli("export", "source", "--url", f"http://127.0.0.1:{free_port()}")
    assert unreachable.code == 1 and unreachable.err.startswith("error: cannot reach")


def test_an_import_chunk_past_a_gap_is_a_409_not_a_complete_import(service, cli, tmp_path):
    import httpx

    from tests.support.engine_gateway import ADMIN_TOKEN

    token = json.loads(cli("ws", "create", "source").out)["token"]
    for n in range(30):
        cli("capture", f"fact {n} of thirty", "-w", "source", "--token", token)
    out = tmp_path / "source.jsonl"
    assert cli("export", "source", "-o", str(out)).code == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert cli("ws", "create", "copy").code == 0
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/x-ndjson"}

    def send(first: int, last: int, final: bool) -> httpx.Response:
        return httpx.post(
            f"{service.url}/v1/workspaces/copy/import",
            headers=admin,
            params={"key": "k30", "first": first, "final": str(final).lower()},
            content="\n".join([lines[0], *lines[first : last + 1]]).encode(),
        )

    assert send(1, 10, False).status_code == 200
    gap = send(21, 30, True)
    assert gap.status_code == 409 and gap.json()["error"]["code"] == "import_gap"
    assert json.loads(cli("count", "-w", "copy").out) == {"count": 10}
    done = send(11, 30, True)
    assert done.status_code == 200 and done.json()["complete"]
    assert json.loads(cli("count", "-w", "copy").out) == {"count": 30}
