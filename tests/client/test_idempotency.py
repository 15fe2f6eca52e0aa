"""`idempotency_key=` through the client (sync and async): a write sent again with the same key
is answered what the first was answered and writes nothing; the same key on another write is
refused; a write without a key is applied every time it is sent."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.client import AsyncClient, Client, ServiceError
from tests.client.helpers import got, new_workspace
from tests.support.engine_gateway import ADMIN_TOKEN, BASE_URL, SyncASGITransport

VALID_KEY_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7E)  # printable, no space
VALID_KEYS = st.text(alphabet=VALID_KEY_CHARS, min_size=1, max_size=200)


async def facts(ws, entry_id):
    """Everything a repeated write could change: the count, every entry as listed, and the
    edges of `entry_id`."""
    return (
        await got(ws.get_count()),
        [e.model_dump() for e in await got(ws.list_recent(n=50))],
        (await got(ws.connections(entry_id)))["items"],
    )


# (write, call made with (workspace client, two entry ids, key)) -- each applied twice would
# change what `facts` shows (a second capture is blocked, a second append appends again, ...)
WRITES = [
    ("capture", lambda ws, a, b, key: ws.capture("a keyed capture", idempotency_key=key)),
    ("append", lambda ws, a, b, key: ws.append(a, "added once", idempotency_key=key)),
    ("update", lambda ws, a, b, key: ws.update(a, "replaced once", idempotency_key=key)),
    ("setStatus", lambda ws, a, b, key: ws.set_status(a, "draft", idempotency_key=key)),
    ("forget", lambda ws, a, b, key: ws.forget(a, idempotency_key=key)),
    ("link", lambda ws, a, b, key: ws.link(a, b, "relates_to", idempotency_key=key)),
    ("unlink", lambda ws, a, b, key: ws.unlink(a, b, "supersedes", idempotency_key=key)),
]


def dumped(answer):
    return answer.model_dump() if hasattr(answer, "model_dump") else answer


@pytest.mark.parametrize("write", [w[1] for w in WRITES], ids=[w[0] for w in WRITES])
def test_a_repeat_with_the_same_key_is_answered_the_same_and_writes_nothing(run, write):
    async def scenario(admin):
        ws, _ = await new_workspace(admin, "keyed")
        a = (await got(ws.capture("entry a", kind="semantic"))).id
        b = (await got(ws.capture("entry b", kind="semantic"))).id
        await got(ws.link(a, b, "supersedes"))
        before = await facts(ws, b)
        first = dumped(await got(write(ws, a, b, "key-1")))
        once = await facts(ws, b)
        assert once != before  # the first one did write
        assert dumped(await got(write(ws, a, b, "key-1"))) == first
        assert await facts(ws, b) == once

    run(scenario)


def test_the_same_key_on_another_write_is_refused_and_writes_nothing(run):
    async def scenario(admin):
        ws, _ = await new_workspace(admin, "reused")
        entry = (await got(ws.capture("keyed once", idempotency_key="shared"))).id
        for other in (
            lambda: ws.capture("a different body", idempotency_key="shared"),
            lambda: ws.append(entry, "a different method", idempotency_key="shared"),
        ):
            with pytest.raises(ServiceError) as caught:
                await got(other())
            assert (caught.value.status, caught.value.code) == (409, "idempotency_key_reused")
        assert await got(ws.get_count()) == 1
        assert (await got(ws.get_entry(entry))).content == "keyed once"

    run(scenario)


def test_without_a_key_a_repeated_append_is_applied_twice(run):
    async def scenario(admin):
        ws, _ = await new_workspace(admin, "unkeyed")
        entry = (await got(ws.capture("base"))).id
        await got(ws.append(entry, "again"))
        await got(ws.append(entry, "again"))
        assert (await got(ws.get_entry(entry))).content == "base\nagain\nagain"

    run(scenario)


def test_concurrent_repeats_of_one_keyed_write_apply_it_once(api):
    async def scenario():
        async with AsyncClient(
            BASE_URL, admin_token=ADMIN_TOKEN, transport=httpx.ASGITransport(app=api)
        ) as admin:
            ws, _ = await new_workspace(admin, "racing")
            entry = (await ws.capture("base")).id
            answers = await asyncio.gather(
                *[ws.append(entry, "once", idempotency_key="race") for _ in range(20)]
            )
            assert len({a.content for a in answers}) == 1
            return (await ws.get_entry(entry)).content

    assert asyncio.run(scenario()) == "base\nonce"


WORKSPACE_IDS = (f"prop-{n}" for n in itertools.count())


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=VALID_KEYS,
    content=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80),
)
def test_any_valid_key_replays_the_first_answer(api, key, content):
    with Client(BASE_URL, admin_token=ADMIN_TOKEN, transport=SyncASGITransport(api)) as admin:
        ws = admin.workspace(admin.create_workspace(next(WORKSPACE_IDS)).workspace.id)
        try:
            first = ws.capture(content, idempotency_key=key)
        except ServiceError as exc:  # content the engine refuses: refused alike
            with pytest.raises(ServiceError) as again:
                ws.capture(content, idempotency_key=key)
            assert (again.value.status, again.value.code) == (exc.status, exc.code)
            assert ws.get_count() == 0
            return
        assert first.outcome == "stored"
        assert ws.capture(content, idempotency_key=key) == first
        assert ws.get_count() == 1


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=st.one_of(
        st.just(""),
        st.text(alphabet=VALID_KEY_CHARS, min_size=201, max_size=300),
        st.text(alphabet=st.characters(max_codepoint=0x7F), min_size=1, max_size=20).filter(
            lambda k: not k.isprintable() or " " in k
        ),
    )
)
def test_any_malformed_key_is_a_400_and_writes_nothing(api, key):
    with Client(BASE_URL, admin_token=ADMIN_TOKEN, transport=SyncASGITransport(api)) as admin:
        ws = admin.workspace(admin.create_workspace(next(WORKSPACE_IDS)).workspace.id)
        with pytest.raises(ServiceError) as caught:
            ws.capture("a keyed write", idempotency_key=key)
        assert (caught.value.status, caught.value.code) == (400, "malformed_request")
        assert ws.get_count() == 0
