"""Inputs that used to escape as 500s: every one answers a 4xx JSON error with a code, and none
of them reaches the gateway (bad input changes nothing)."""
from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.errors import MalformedRequest
from minisphere.http.handling import MAX_JSON_NESTING_LEVELS, parse_json
from tests.http.standin import (
    ADMIN,
    TENANT,
    StandInGateway,
    StandInTransfer,
    make_api,
    one,
)

EXAMPLES = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


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
    return (f'{{"src": "{uuid.uuid4()}", "dst": "{uuid.uuid4()}", "type": "relates_to", '
            f'"metadata": {metadata_json}}}')


# ---- deeply nested JSON -----------------------------------------------------------------------
@EXAMPLES
@given(levels=st.one_of(st.integers(MAX_JSON_NESTING_LEVELS + 1, 3000),
                        st.integers(50_000, 150_000)),
       kinds=st.sampled_from(["o", "a", "oa", "aao"]),
       route=st.sampled_from([("POST", "/v1/w/notes/capture", TENANT),
                              ("POST", "/v1/w/notes/link", ADMIN),
                              ("POST", "/v1/workspaces", ADMIN),
                              ("POST", "/v1/workspaces/notes/restore", ADMIN)]))
def test_deeply_nested_json_body_is_a_400_not_a_500(levels, kinds, route):
    if "o" in kinds:                     # 6 bytes a level: stay under the body limit
        levels = min(levels, 150_000 // kinds.count("o") * len(kinds) // 2)
    gateway = StandInGateway()
    method, url, headers = route
    response = one(make_api(gateway), method, url, content=nested(levels, kinds).encode(),
                   headers={**headers, "Content-Type": "application/json"})
    assert_refused(response, 400, "malformed_request")
    assert gateway.calls == []


def test_json_nested_to_the_limit_still_reaches_the_workspace():
    gateway = StandInGateway()
    body = link_body(nested(MAX_JSON_NESTING_LEVELS - 1))       # the body object is a level
    response = one(make_api(gateway), "POST", "/v1/w/notes/link", content=body.encode(),
                   headers=TENANT)
    assert response.status_code == 200 and [c[2] for c in gateway.calls] == ["link"]
    with pytest.raises(MalformedRequest, match="nests deeper"):
        parse_json(nested(MAX_JSON_NESTING_LEVELS + 1))
    assert parse_json(nested(MAX_JSON_NESTING_LEVELS, "a")) is not None


# ---- query numbers ----------------------------------------------------------------------------
NOT_ASCII_NUMBERS = st.one_of(
    st.sampled_from(["²", "١٠", "５", "1²", "⁹", "𝟗", "-1", "+5", " 5", "5 ", "0x10", "1e3", "",
                     "0", "99999999999999999999", "1" * 5000]),
    st.text(min_size=1, max_size=12).filter(lambda t: not t.isascii() or not t.isdigit()))


@EXAMPLES
@given(raw=NOT_ASCII_NUMBERS,
       route=st.sampled_from(["/v1/workspaces?limit=", "/v1/maintenance/runs?limit="]))
def test_limit_that_is_not_ascii_digits_is_a_400_not_a_500(raw, route):
    gateway = StandInGateway()
    response = one(make_api(gateway), "GET", route.split("?")[0],
                   params={"limit": raw}, headers=ADMIN)
    assert_refused(response, 400, "malformed_request")
    assert gateway.calls == []


@EXAMPLES
@given(raw=NOT_ASCII_NUMBERS)
def test_import_first_line_that_is_not_ascii_digits_is_a_400_not_a_500(raw):
    transfer = StandInTransfer()
    response = one(make_api(transfer=transfer), "POST", "/v1/workspaces/notes/import",
                   params={"key": "abc123", "first": raw}, content=b'{"record":"header"}\n',
                   headers=ADMIN)
    assert_refused(response, 400, "malformed_request")
    assert transfer.chunks == []


def test_limit_parsing_takes_ascii_digits_in_range_and_nothing_else():
    gateway = StandInGateway()
    api = make_api(gateway)
    for route in ("/v1/workspaces", "/v1/maintenance/runs"):
        assert one(api, "GET", route, params={"limit": "²"}, headers=ADMIN).status_code == 400
    assert one(api, "GET", "/v1/workspaces", params={"limit": "7"}, headers=ADMIN).status_code \
        == 200
    assert one(api, "GET", "/v1/maintenance/runs", params={"limit": "1000"},
               headers=ADMIN).status_code == 200
    assert gateway.calls == [("list", 7, ""), ("runs", None, 1000)]


def test_import_key_in_another_script_is_refused_before_the_workspace():
    transfer = StandInTransfer()
    response = one(make_api(transfer=transfer), "POST", "/v1/workspaces/notes/import",
                   params={"key": "²٣ｋｅｙ", "first": "1"}, content=b'{"record":"header"}\n',
                   headers=ADMIN)
    assert_refused(response, 400, "transfer_failed")
    assert transfer.chunks == []


# ---- the import body's lines ------------------------------------------------------------------
@EXAMPLES
@given(levels=st.integers(MAX_JSON_NESTING_LEVELS + 1, 100_000), where=st.integers(0, 3),
       first=st.integers(1, 10_000))
def test_import_line_nested_too_deeply_is_refused_naming_its_line(levels, where, first):
    transfer = StandInTransfer()
    lines = ['{"record":"header"}', '{"record":"entry"}', '{"record":"entry"}',
             '{"record":"edge"}']
    lines[where] = nested(levels, "oa")
    response = one(make_api(transfer=transfer), "POST", "/v1/workspaces/notes/import",
                   params={"key": "abc123", "first": str(first)},
                   content="\n".join(lines).encode(), headers=ADMIN)
    assert_refused(response, 422, "import_format")
    line_number = 1 if where == 0 else first + where
    assert response.json()["error"]["message"].startswith(f"line {line_number}: ")
    assert transfer.chunks == []


def test_import_line_with_many_brackets_but_shallow_is_not_refused_yet_a_deep_one_is():
    transfer = StandInTransfer()
    api = make_api(transfer=transfer)
    entry = json.dumps({"record": "entry", "tags": [[]] * 200})     # 400 brackets, 3 levels
    for line, status in ((nested(MAX_JSON_NESTING_LEVELS + 1), 422), (entry, 200)):
        response = one(api, "POST", "/v1/workspaces/notes/import",
                       params={"key": "abc123", "first": "1"},
                       content=f'{{"record":"header"}}\n{line}\n'.encode(), headers=ADMIN)
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
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/v1/w/notes/capture",
             "raw_path": b"/v1/w/notes/capture", "root_path": "", "query_string": b"",
             "headers": [(b"host", b"test"), (b"content-length", declared),
                         (b"authorization", TENANT["Authorization"].encode())],
             "client": ("127.0.0.1", 1), "server": ("test", 80)}
    body = iter([{"type": "http.request", "body": b'{"content": "x"}', "more_body": False}])

    async def receive():
        return next(body, {"type": "http.disconnect"})

    async def send(message):
        messages.append(message)
    asyncio.run(api(scope, receive, send))
    start = next(m for m in messages if m["type"] == "http.response.start")
    payload = json.loads(b"".join(m.get("body", b"") for m in messages
                                  if m["type"] == "http.response.body"))
    assert start["status"] == 400 and payload["error"]["code"] == "malformed_request"
    assert gateway.calls == []


# ---- blueprints -------------------------------------------------------------------------------
def test_create_route_refuses_an_invalid_cron_before_the_directory():
    gateway = StandInGateway()
    api = make_api(gateway)
    blueprint = {"bindings": {"scheduledTasks": {"cron": "99 * * * *", "limit": 10}}}
    refused = one(api, "POST", "/v1/workspaces", headers=ADMIN,
                  json={"id": "ws-badcron", "blueprint": blueprint})
    assert_refused(refused, 422, "invalid_argument")
    assert "99" in refused.json()["error"]["message"] and gateway.calls == []
    blueprint["bindings"]["scheduledTasks"]["cron"] = "*/15 * * * *"
    created = one(api, "POST", "/v1/workspaces", headers=ADMIN,
                  json={"id": "ws-goodcron", "blueprint": blueprint})
    assert created.status_code == 201 and [c[0] for c in gateway.calls] == ["create"]
