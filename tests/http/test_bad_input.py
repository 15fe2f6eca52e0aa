"""Inputs that used to escape as 500s: every one answers a 4xx JSON error with a code, and none
of them reaches the gateway (bad input changes nothing). Wrong argument values are sent through
to real engine files (tests/support/engine_gateway.py): the exact status, and no write."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.engine.methods import METHODS
from minisphere.errors import MalformedRequest
from minisphere.http.handling import MAX_JSON_NESTING_LEVELS, parse_json
from tests.engine.helpers import snapshot
from tests.http.standin import (
    ADMIN,
    TENANT,
    StandInGateway,
    StandInTransfer,
    make_api,
    one,
    send,
    shared_api,
)
from tests.support.call_bodies import CALL_BODIES
from tests.support.engine_gateway import ADMIN_TOKEN as GATEWAY_ADMIN
from tests.support.engine_gateway import EngineGateway, engine_api

EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def nested(levels: int, kinds: str = "o") -> str:
    """JSON text nesting `levels` containers; `kinds` cycles object ('o') / array ('a')."""
    opening, closing = [], []
    for level in range(levels):
        if kinds[level % len(kinds)] == "o":
            opening.append('{"k":' if level < levels - 1 else "{")
            closing.append("}")
        else:
            opening.append("[")
            closing.append("]")
    return "".join(opening) + "".join(reversed(closing))


def assert_refused(response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


def link_body(metadata_json: str) -> str:
    return (
        f'{{"src": "{uuid.uuid4()}", "dst": "{uuid.uuid4()}", "type": "relates_to", '
        f'"metadata": {metadata_json}}}'
    )


# ---- deeply nested JSON -----------------------------------------------------------------------
@EXAMPLES
@given(
    levels=st.one_of(st.integers(MAX_JSON_NESTING_LEVELS + 1, 3000), st.integers(50_000, 150_000)),
    kinds=st.sampled_from(["o", "a", "oa", "aao"]),
    route=st.sampled_from(
        [
            ("POST", "/v1/w/notes/capture", TENANT),
            ("POST", "/v1/w/notes/link", ADMIN),
            ("POST", "/v1/workspaces", ADMIN),
            ("POST", "/v1/workspaces/notes/restore", ADMIN),
        ]
    ),
)
def test_deeply_nested_json_body_is_a_400_not_a_500(levels, kinds, route):
    if "o" in kinds:  # 6 bytes a level: stay under the body limit
        levels = min(levels, 150_000 // kinds.count("o") * len(kinds) // 2)
    gateway = StandInGateway()
    method, url, headers = route
    response = one(
        shared_api(gateway),
        method,
        url,
        content=nested(levels, kinds).encode(),
        headers={**headers, "Content-Type": "application/json"},
    )
    assert_refused(response, 400, "malformed_request")
    assert gateway.calls == []


def test_json_nested_to_the_limit_still_reaches_the_workspace():
    gateway = StandInGateway()
    body = link_body(nested(MAX_JSON_NESTING_LEVELS - 1))  # the body object is a level
    response = one(
        make_api(gateway), "POST", "/v1/w/notes/link", content=body.encode(), headers=TENANT
    )
    assert response.status_code == 200 and [c[2] for c in gateway.calls] == ["link"]
    with pytest.raises(MalformedRequest, match="nests deeper"):
        parse_json(nested(MAX_JSON_NESTING_LEVELS + 1))
    assert parse_json(nested(MAX_JSON_NESTING_LEVELS, "a")) is not None


# ---- wrong argument values ----------------------------------------------------------------------
def good_bodies(a: str, b: str) -> dict:
    """A valid body of every method, on entries a and b (both semantic)."""
    return {
        "capture": {"content": "fine"},
        "recall": {"query": "x"},
        "getEntry": {"id": a},
        "connections": {"id": a},
        "forget": {"id": a},
        "append": {"id": a, "addition": "more"},
        "update": {"id": a, "content": "new"},
        "setStatus": {"id": a, "status": "draft"},
        "link": {"src": a, "dst": b, "type": "relates_to"},
        "unlink": {"src": a, "dst": b, "type": "relates_to"},
        "listRecent": {"n": 3},
        "graphView": {"seedIds": [a]},
        "getTags": {},
        "getCount": {},
        "getStats": {},
        "getBrief": {},
        "runStalenessPass": {"limit": 3},
    }


WRONG_VALUES = (None, 12345, "", [], {"x": 1}, True)


@pytest.fixture
def seeded_app(tmp_path):
    """The app over a real engine workspace `notes` holding two entries: (api, token, ws, ids)."""
    gateway = EngineGateway(tmp_path)
    token = gateway.create_now("notes")["token"]
    ws = gateway.workspace("notes")
    ids = [ws.capture(f"seed entry {n}", kind="semantic")["id"] for n in range(2)]
    yield engine_api(gateway), {"Authorization": f"Bearer {token}"}, ws, ids
    gateway.close()


def headers_for(method: str, tenant: dict) -> dict:
    return (
        {"Authorization": f"Bearer {GATEWAY_ADMIN}"}
        if METHODS[method].access == "maintenance"
        else tenant
    )


def test_every_method_has_a_good_body(seeded_app):
    api, tenant, _ws, (a, b) = seeded_app
    bodies = good_bodies(a, b)
    assert set(bodies) == set(METHODS)
    for method in sorted(METHODS, key=lambda name: name == "forget"):  # forget a: the last
        response = one(
            api,
            "POST",
            f"/v1/w/notes/{method}",
            json=bodies[method],
            headers=headers_for(method, tenant),
        )
        assert response.status_code == 200, (method, response.text)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_wrong_argument_value_is_a_422_invalid_argument_and_changes_nothing(seeded_app, method):
    """Each argument of a good body set to a value of the wrong type or range, through the real
    app to the real engine: 422 invalid_argument (never a 5xx), the file unchanged -- except a
    `limit` of 12345, which is a valid limit."""
    api, tenant, ws, (a, b) = seeded_app
    good = good_bodies(a, b)[method]
    cases = [(key, wrong) for key in good for wrong in WRONG_VALUES]
    before = snapshot(ws)
    answers = send(
        api,
        [
            (
                "POST",
                f"/v1/w/notes/{method}",
                {"json": {**good, key: wrong}, "headers": headers_for(method, tenant)},
            )
            for key, wrong in cases
        ],
    )
    for (key, wrong), response in zip(cases, answers):
        if method == "runStalenessPass" and key == "limit" and type(wrong) is int:
            assert response.status_code == 200, response.text
        else:
            assert_refused(response, 422, "invalid_argument")
    if method != "runStalenessPass":  # a pass records when it ran
        assert snapshot(ws) == before


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    method=st.sampled_from(sorted(METHODS)),
    body=CALL_BODIES,
)
def test_any_body_is_answered_200_or_422_never_a_5xx(seeded_app, method, body):
    """No id in these bodies names an entry, so nothing can be 404 or 409: a body is either
    a valid call (200) or refused with 422 invalid_argument, writing nothing."""
    api, tenant, ws, _ = seeded_app
    before = snapshot(ws)
    response = one(
        api, "POST", f"/v1/w/notes/{method}", json=body, headers=headers_for(method, tenant)
    )
    if response.status_code != 200:
        assert_refused(response, 422, "invalid_argument")
        assert snapshot(ws) == before


# ---- query numbers ----------------------------------------------------------------------------
NOT_ASCII_NUMBERS = st.one_of(
    # digits from other scripts and lookalikes on purpose: none may be read as a number
    st.sampled_from(
        [
            "²",
            "١٠",  # noqa: RUF001 - a lookalike on purpose
            "５",  # noqa: RUF001 - a lookalike on purpose
            "1²",
            "⁹",
            "𝟗",  # noqa: RUF001 - a lookalike on purpose
            "-1",
            "+5",
            " 5",
            "5 ",
            "0x10",
            "1e3",
            "",
            "0",
            "99999999999999999999",
            "1" * 5000,
        ]
    ),
    st.text(min_size=1, max_size=12).filter(lambda t: not t.isascii() or not t.isdigit()),
)


@EXAMPLES
@given(
    raw=NOT_ASCII_NUMBERS,
    route=st.sampled_from(["/v1/workspaces?limit=", "/v1/maintenance/runs?limit="]),
)
def test_limit_that_is_not_ascii_digits_is_a_400_not_a_500(raw, route):
    gateway = StandInGateway()
    response = one(
        shared_api(gateway), "GET", route.split("?")[0], params={"limit": raw}, headers=ADMIN
    )
    assert_refused(response, 400, "malformed_request")
    assert gateway.calls == []


@EXAMPLES
@given(raw=NOT_ASCII_NUMBERS)
def test_import_first_line_that_is_not_ascii_digits_is_a_400_not_a_500(raw):
    transfer = StandInTransfer()
    response = one(
        shared_api(transfer=transfer),
        "POST",
        "/v1/workspaces/notes/import",
        params={"key": "abc123", "first": raw},
        content=b'{"record":"header"}\n',
        headers=ADMIN,
    )
    assert_refused(response, 400, "malformed_request")
    assert transfer.chunks == []


def test_limit_parsing_takes_ascii_digits_in_range_and_nothing_else():
    gateway = StandInGateway()
    api = make_api(gateway)
    for route in ("/v1/workspaces", "/v1/maintenance/runs"):
        assert one(api, "GET", route, params={"limit": "²"}, headers=ADMIN).status_code == 400
    assert (
        one(api, "GET", "/v1/workspaces", params={"limit": "7"}, headers=ADMIN).status_code == 200
    )
    assert (
        one(api, "GET", "/v1/maintenance/runs", params={"limit": "1000"}, headers=ADMIN).status_code
        == 200
    )
    assert gateway.calls == [("list", 7, ""), ("runs", None, 1000)]


def test_import_key_in_another_script_is_refused_before_the_workspace():
    transfer = StandInTransfer()
    response = one(
        make_api(transfer=transfer),
        "POST",
        "/v1/workspaces/notes/import",
        params={"key": "²٣ｋｅｙ", "first": "1"},
        content=b'{"record":"header"}\n',
        headers=ADMIN,
    )
    assert_refused(response, 400, "transfer_failed")
    assert transfer.chunks == []


# ---- the import body's lines ------------------------------------------------------------------
@EXAMPLES
@given(
    levels=st.integers(MAX_JSON_NESTING_LEVELS + 1, 100_000),
    where=st.integers(0, 3),
    first=st.integers(1, 10_000),
)
def test_import_line_nested_too_deeply_is_refused_naming_its_line(levels, where, first):
    transfer = StandInTransfer()
    lines = ['{"record":"header"}', '{"record":"entry"}', '{"record":"entry"}', '{"record":"edge"}']
    lines[where] = nested(levels, "oa")
    response = one(
        shared_api(transfer=transfer),
        "POST",
        "/v1/workspaces/notes/import",
        params={"key": "abc123", "first": str(first)},
        content="\n".join(lines).encode(),
        headers=ADMIN,
    )
    assert_refused(response, 422, "import_format")
    line_number = 1 if where == 0 else first + where
    assert response.json()["error"]["message"].startswith(f"line {line_number}: ")
    assert transfer.chunks == []


def test_import_line_with_many_brackets_but_shallow_is_not_refused_yet_a_deep_one_is():
    transfer = StandInTransfer()
    api = make_api(transfer=transfer)
    entry = json.dumps({"record": "entry", "tags": [[]] * 200})  # 400 brackets, 3 levels
    for line, status in ((nested(MAX_JSON_NESTING_LEVELS + 1), 422), (entry, 200)):
        response = one(
            api,
            "POST",
            "/v1/workspaces/notes/import",
            params={"key": "abc123", "first": "1"},
            content=f'{{"record":"header"}}\n{line}\n'.encode(),
            headers=ADMIN,
        )
        assert response.status_code == status, response.text
    assert len(transfer.chunks) == 1


# ---- headers ----------------------------------------------------------------------------------
@pytest.mark.parametrize("declared", [b"\xc2\xb2", b"\xb2", b"-5", b"1e3", b"0x10", b"12 34"])
def test_malformed_content_length_is_a_400_not_a_500(declared):
    """Sent as raw ASGI (httpx refuses to send such a header): a server in front may pass it."""
    import asyncio

    gateway = StandInGateway()
    api = make_api(gateway)
    messages = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/w/notes/capture",
        "raw_path": b"/v1/w/notes/capture",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"test"),
            (b"content-length", declared),
            (b"authorization", TENANT["Authorization"].encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
    }
    body = iter([{"type": "http.request", "body": b'{"content": "x"}', "more_body": False}])

    async def receive():
        return next(body, {"type": "http.disconnect"})

    async def send(message):
        messages.append(message)

    asyncio.run(api(scope, receive, send))
    start = next(m for m in messages if m["type"] == "http.response.start")
    payload = json.loads(
        b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    )
    assert start["status"] == 400 and payload["error"]["code"] == "malformed_request"
    assert gateway.calls == []


# ---- blueprints -------------------------------------------------------------------------------
def test_create_route_refuses_an_invalid_cron_before_the_directory():
    gateway = StandInGateway()
    api = make_api(gateway)
    blueprint = {"bindings": {"scheduledTasks": {"cron": "99 * * * *", "limit": 10}}}
    refused = one(
        api,
        "POST",
        "/v1/workspaces",
        headers=ADMIN,
        json={"id": "ws-badcron", "blueprint": blueprint},
    )
    assert_refused(refused, 422, "invalid_argument")
    assert "99" in refused.json()["error"]["message"] and gateway.calls == []
    blueprint["bindings"]["scheduledTasks"]["cron"] = "*/15 * * * *"
    created = one(
        api,
        "POST",
        "/v1/workspaces",
        headers=ADMIN,
        json={"id": "ws-goodcron", "blueprint": blueprint},
    )
    assert created.status_code == 201 and [c[0] for c in gateway.calls] == ["create"]


# ---- text that is not valid Unicode ------------------------------------------------------------
LONE_SURROGATES = st.sampled_from(["\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\uDABC"])


@EXAMPLES
@given(
    method=st.sampled_from(sorted(METHODS)),
    surrogate=LONE_SURROGATES,
    keyed=st.booleans(),
    in_key=st.booleans(),
)
def test_a_lone_surrogate_in_any_body_is_a_400_that_reaches_no_workspace(
    method, surrogate, keyed, in_key
):
    """A lone UTF-16 surrogate escape parses to text no UTF-8 encoder takes: it once failed the
    key digest of a keyed write with a 500 (and a whole group commit with it)."""
    gateway = StandInGateway()
    body = (f'{{"x{surrogate}": 1}}' if in_key else f'{{"content": "x {surrogate}"}}').encode()
    headers = {**TENANT, **({"Idempotency-Key": "k-" + uuid.uuid4().hex} if keyed else {})}
    response = one(
        shared_api(gateway),
        "POST",
        f"/v1/w/notes/{method}",
        content=body,
        headers={**headers, "Content-Type": "application/json"},
    )
    assert_refused(response, 400, "malformed_request")
    assert "Unicode" in response.json()["error"]["message"]
    assert gateway.calls == []


def test_a_surrogate_pair_is_text_like_any_other():
    assert parse_json(b'{"content": "ok \\ud83d\\ude00"}') == {"content": "ok \U0001f600"}


@EXAMPLES
@given(surrogate=LONE_SURROGATES, where=st.integers(0, 2))
def test_an_import_line_with_a_lone_surrogate_is_refused_naming_its_line(surrogate, where):
    transfer = StandInTransfer()
    lines = [
        '{"record":"header"}',
        '{"record":"entry","content":"a"}',
        '{"record":"entry","content":"b"}',
    ]
    lines[where] = lines[where][:-1] + f',"note":"bad {surrogate}"}}'
    response = one(
        shared_api(transfer=transfer),
        "POST",
        "/v1/workspaces/notes/import",
        params={"key": "abc123", "first": "1"},
        content=("\n".join(lines) + "\n").encode(),
        headers=ADMIN,
    )
    assert_refused(response, 422, "import_format")  # as a line nested too deeply
    assert f"line {where + 1}" in response.json()["error"]["message"]
    assert transfer.chunks == []
