"""Import and export through the running service: the admin routes, the CLI against the
service, and the request id header of the per-request log line."""

from __future__ import annotations

import json

from minisphere.cli.main import main


def _fill(http, headers, workspace_id):
    url = f"/v1/w/{workspace_id}"
    a = http.post(
        f"{url}/capture",
        json={"content": "exported through the service 🚀", "tags": ["svc"], "kind": "episodic"},
        headers=headers,
    ).json()["id"]
    b = http.post(
        f"{url}/capture", json={"content": "second fact for export"}, headers=headers
    ).json()["id"]
    assert (
        http.post(
            f"{url}/link", json={"src": a, "dst": b, "type": "relates_to"}, headers=headers
        ).status_code
        == 200
    )
    assert (
        http.post(
            f"{url}/append", json={"id": b, "addition": "and a revision"}, headers=headers
        ).status_code
        == 200
    )
    return a, b


def test_service_transfer_export_import_round_trip(
    http, admin_headers, new_workspace, service, tmp_path, capsys
):
    source, source_headers = new_workspace()
    _fill(http, source_headers, source)
    response = http.get(f"/v1/workspaces/{source}/export", headers=admin_headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert response.headers["x-request-id"]
    lines = response.text.splitlines()
    assert json.loads(lines[0])["counts"]["entries"] == 2 and len(lines) == 4
    assert (
        http.get(f"/v1/workspaces/{source}/export", headers=source_headers).status_code == 401
    )  # workspace token: no
    assert http.get("/v1/workspaces/nope-missing/export", headers=admin_headers).status_code == 404

    target, _ = new_workspace()
    export = tmp_path / "svc.jsonl"
    flags = ["--url", service["url"], "--admin-token", service["admin"]]
    assert main(["export", source, "-o", str(export), *flags]) == 0
    assert main(["import", target, str(export), "--batch", "1", *flags]) == 0
    report = json.loads(capsys.readouterr().err.strip().splitlines()[-1].split(": ", 1)[1])
    assert report["entries"] == 2 and report["edges"] == 1 and report["complete"]
    again = http.get(f"/v1/workspaces/{target}/export", headers=admin_headers).text.splitlines()
    assert again[1:] == lines[1:]  # same ids, timestamps, revisions
    assert main(["import", target, str(export), *flags]) == 0  # again: all duplicates
    report = json.loads(capsys.readouterr().err.strip().splitlines()[-1].split(": ", 1)[1])
    assert report["duplicateIds"] == 2 and report["entries"] == 0


def test_service_transfer_import_refuses_bad_chunks(http, admin_headers, new_workspace):
    target, _ = new_workspace()
    url = f"/v1/workspaces/{target}/import"
    bad = http.post(
        url,
        params={"key": "abc", "first": 1, "final": "true"},
        content=b'{"record":"entry"}\n',
        headers=admin_headers,
    )
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "import_format"
    assert (
        http.post(url, params={"key": "a/b"}, content=b"{}", headers=admin_headers).status_code
        == 400
    )
    echoed = http.get("/healthz", headers={"X-Request-Id": "trace-123"})
    assert echoed.headers["x-request-id"] == "trace-123"
