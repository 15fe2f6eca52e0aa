"""Two workspaces never see each other's data; ids cannot leave the data folder."""

import pytest


def call(http, ws, headers, method, body=None):
    return http.post(f"/v1/w/{ws}/{method}", json=body or {}, headers=headers)


def test_two_workspaces_are_isolated(http, new_workspace):
    a, ha = new_workspace()
    b, hb = new_workspace()
    stored = call(http, a, ha, "capture", {"content": "only in a", "tags": ["private"]}).json()
    assert call(http, b, hb, "getCount").json() == {"count": 0}
    assert call(http, b, hb, "getEntry", {"id": stored["id"]}).status_code == 404
    assert call(http, b, hb, "listRecent").json() == {"items": []}
    assert call(http, b, hb, "getTags").json() == {"tags": [], "truncated": False}
    # the same content in b is a new entry there, not a duplicate of a's
    in_b = call(http, b, hb, "capture", {"content": "only in a"}).json()
    assert in_b["outcome"] == "stored" and in_b["id"] != stored["id"]
    assert call(http, b, hb, "forget", {"id": stored["id"]}).status_code == 404
    assert call(http, a, ha, "getEntry", {"id": stored["id"]}).status_code == 200


ESCAPES = [
    "..",
    "...",
    "%2e%2e",
    "..%2fx",
    "..%2Fetc",
    "a%2f..%2f..",
    "%00abc",
    "ab%5cc",
    "ABC",
    "a",
    "ab",
    "-abc",
    "abc-",
    "ws_1",
    "ws.1",
    "x" * 64,
    "%20abc",
    "ab%0acd",
    "abc%00",
]


@pytest.mark.parametrize("raw_id", ESCAPES)
def test_escaping_workspace_ids_are_refused(http, admin_headers, raw_id, service):
    for method in ("getCount", "capture"):
        response = http.post(
            f"/v1/w/{raw_id}/{method}", json={"content": "x"}, headers=admin_headers
        )
        assert response.status_code in (400, 404), (raw_id, response.text)
        assert "error" in response.json()
    for response in (
        http.get(f"/v1/workspaces/{raw_id}", headers=admin_headers),
        http.delete(f"/v1/workspaces/{raw_id}", headers=admin_headers),
    ):
        assert response.status_code in (400, 404), (raw_id, response.text)
    created = http.post("/v1/workspaces", headers=admin_headers, json={"id": raw_id})
    assert created.status_code == 400, created.text
    root = service["data_dir"]
    assert {p.name for p in root.iterdir()} <= {
        "control.db",
        "control.db-shm",
        "control.db-wal",
        "workspaces",
        "litestream",
    }
    assert all(
        p.is_dir() and p.parent == root / "workspaces" for p in (root / "workspaces").iterdir()
    )


def test_dot_segments_in_url_do_not_reach_a_workspace(http, admin_headers):
    response = http.post("/v1/w/../workspaces/getCount", headers=admin_headers, json={})
    assert response.status_code in (400, 404, 405)
