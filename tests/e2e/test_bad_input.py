"""Bad input on every route: the right 4xx, a JSON error body, and nothing changed."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.engine.methods import METHODS
from tests.support.call_bodies import CALL_BODIES

GOOD = {
    "capture": {"content": "fine"},
    "recall": {"query": "x"},
    "getEntry": {"id": None},
    "connections": {"id": None},
    "forget": {"id": None},
    "append": {"id": None, "addition": "more"},
    "update": {"id": None, "content": "new"},
    "setStatus": {"id": None, "status": "draft"},
    "link": {"src": None, "dst": None, "type": "relates_to"},
    "unlink": {"src": None, "dst": None, "type": "relates_to"},
    "listRecent": {"n": 3},
    "graphView": {"seedIds": [None]},
    "getTags": {},
    "getCount": {},
    "getStats": {},
    "getBrief": {},
    "runStalenessPass": {"limit": 3},
}


@pytest.fixture(scope="module")
def seeded(http, admin_headers):
    created = http.post("/v1/workspaces", headers=admin_headers, json={}).json()
    ws, h = created["workspace"]["id"], {"Authorization": f"Bearer {created['token']}"}
    entry = http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": "seed entry"}).json()
    yield ws, h, entry["id"]
    http.delete(f"/v1/workspaces/{ws}", headers=admin_headers)


def snapshot(http, ws, h, entry_id):
    return (
        http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json(),
        http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": entry_id}).json(),
    )


def assert_error(response, statuses):
    assert response.status_code in statuses, response.text
    error = response.json()["error"]
    assert isinstance(error["code"], str) and isinstance(error["message"], str)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_bad_bodies_on_every_method(http, seeded, admin_headers, method):
    ws, h, entry_id = seeded
    headers = admin_headers if method == "runStalenessPass" else h
    before = snapshot(http, ws, h, entry_id)
    url = f"/v1/w/{ws}/{method}"
    json_headers = {**headers, "Content-Type": "application/json"}
    for raw in (
        b"{",
        b"not json",
        b"[1, 2]",
        b'"text"',
        b"42",
        b"null",
        b'{"a": NaN}',
        b"\xff\xfe",
    ):
        assert_error(http.post(url, headers=json_headers, content=raw), (400,))
    good = {
        k: (entry_id if v is None else [entry_id] if v == [None] else v)
        for k, v in GOOD[method].items()
    }
    assert_error(http.post(url, headers=headers, json={**good, "bogusField": 1}), (422,))
    for key in good:
        for wrong in (None, 12345, "", [], {"x": 1}, True):
            if key in ("n", "limit") and wrong is None:
                continue
            response = http.post(url, headers=headers, json={**good, key: wrong})
            if response.status_code == 200:
                continue  # e.g. a limit of 12345 is a valid request
            # the same as in process (tests/http/test_bad_input.py): 422, never a 5xx
            assert_error(response, (422,))
    assert_error(
        http.post(url, headers=headers, content=b"{" + b" " * (1024 * 1024 + 1) + b"}"), (413,)
    )
    assert http.get(url, headers=headers).status_code == 405
    after = snapshot(http, ws, h, entry_id)
    assert after == before


def test_specific_errors(http, seeded):
    ws, h, entry_id = seeded
    big = http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": "x" * (64 * 1024 + 1)})
    assert big.status_code == 413 and big.json()["error"]["code"] == "content_too_large"
    missing = http.post(
        f"/v1/w/{ws}/getEntry", headers=h, json={"id": "00000000-0000-4000-8000-000000000000"}
    )
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    self_link = http.post(
        f"/v1/w/{ws}/link", headers=h, json={"src": entry_id, "dst": entry_id, "type": "relates_to"}
    )
    assert self_link.status_code == 422 and self_link.json()["error"]["code"] == "self_link"
    other = http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": "semantic one"}).json()
    gate = http.post(
        f"/v1/w/{ws}/link", headers=h, json={"src": entry_id, "dst": other["id"], "type": "follows"}
    )
    assert gate.status_code == 409 and gate.json()["error"]["code"] == "kind_gate_violation"
    unknown = http.post(f"/v1/w/{ws}/dropTables", headers=h, json={})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    assert http.get("/v1/nothing").json()["error"]["code"] == "not_found"


def test_bad_admin_bodies(http, admin_headers):
    for body in (
        {"id": 5},
        {"blueprint": {"bindings": {"scheduledTasks": {"cron": "bad"}}}},
        {"blueprint": {"bindings": {"vector": {"model": "m", "dimensions": 0}}}},
        {"surprise": True},
        {"blueprint": "nope"},
    ):
        response = http.post("/v1/workspaces", headers=admin_headers, json=body)
        assert response.status_code in (400, 422), (body, response.text)
    assert http.post("/v1/workspaces", headers=admin_headers, content=b"{").status_code == 400
    for limit in ("0", "-1", "abc", "100000"):
        response = http.get(f"/v1/workspaces?limit={limit}", headers=admin_headers)
        assert response.status_code == 400, response.text


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    method=st.sampled_from(sorted(METHODS)),
    body=CALL_BODIES,
)
def test_no_input_produces_a_500(http, seeded, admin_headers, method, body):
    ws, h, _ = seeded
    headers = admin_headers if method == "runStalenessPass" else h
    response = http.post(f"/v1/w/{ws}/{method}", headers=headers, json=body)
    assert response.status_code in (200, 422), response.text  # no id here names an entry
    if response.status_code != 200:
        assert set(response.json()["error"]) == {"code", "message"}
