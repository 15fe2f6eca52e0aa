"""A real S3-protocol server on loopback (moto's server mode) for tests that use boto3.

`s3_endpoint` (session scope) yields the endpoint URL, e.g. "http://127.0.0.1:40123", with fake
credentials and a region set in the environment for the whole session. The server starts once per
test process even when the fixture is registered from more than one conftest (the server object
is a module-level singleton, reference-counted). Its state is in memory and shared by every test
of the session: use a fresh bucket name per test (see `fresh_bucket`).

Registered for every test by `pytest_plugins = ["tests.support.s3"]` in tests/conftest.py.
"""

from __future__ import annotations

import logging
import threading
import uuid

import pytest

FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
# Anything that could lead boto3 to real credentials or a real account.
CLEARED_ENV = (
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
)

_lock = threading.Lock()
_state = {"server": None, "url": None, "users": 0}


def _acquire() -> str:
    with _lock:
        if _state["server"] is None:
            from moto.server import ThreadedMotoServer

            # a line per request drowned a failing test's own output (replication daemons
            # list their replicas every second)
            logging.getLogger("werkzeug").setLevel(logging.WARNING)
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            host, port = server.get_host_and_port()
            _state.update(server=server, url=f"http://{host}:{port}")
        _state["users"] += 1
        return _state["url"]


def _release() -> None:
    with _lock:
        _state["users"] -= 1
        if _state["users"] == 0 and _state["server"] is not None:
            _state["server"].stop()
            _state.update(server=None, url=None)


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        for name, value in FAKE_ENV.items():
            mp.setenv(name, value)
        for name in CLEARED_ENV:
            mp.delenv(name, raising=False)
        # No shared config/credentials files: only the fake keys above can be used.
        empty = tmp_path_factory.mktemp("aws") / "none"
        empty.write_text("")
        mp.setenv("AWS_CONFIG_FILE", str(empty))
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
        url = _acquire()
        try:
            yield url
        finally:
            _release()


@pytest.fixture
def fresh_bucket(s3_endpoint):
    """A new, empty bucket on the loopback server; yields its name."""
    import boto3

    name = f"test-{uuid.uuid4().hex[:20]}"
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    yield name
