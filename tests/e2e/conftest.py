"""One Ray + Serve for the whole service test session (starting Ray costs seconds).

The service runs with its data in a temporary folder, on a free loopback port, with a known
admin token. Tests talk to it over real HTTP with httpx.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

from tests.support.patient_http import PatientTransport
from tests.support.tcp_relay import TcpRelay, free_port

ADMIN_TOKEN = "test-admin-" + uuid.uuid4().hex
SNAPSHOT_BUCKET = "minisphere-service-tests"
SNAPSHOT_PREFIX = "service-tests/"


def service_env(data_dir: Path, port: int, relay_url: str) -> dict[str, str]:
    """The session service's settings: S3 snapshots through the relay, one ingress replica."""
    return {
        "MINISPHERE_DATA_DIR": str(data_dir),
        "MINISPHERE_HOST": "127.0.0.1",
        "MINISPHERE_PORT": str(port),
        "MINISPHERE_ADMIN_TOKEN": ADMIN_TOKEN,
        "MINISPHERE_RAY_NAMESPACE": "minisphere-test",
        "MINISPHERE_SYNCHRONOUS": "NORMAL",
        "MINISPHERE_MAX_REPLICAS": "1",
        "MINISPHERE_SNAPSHOT_STORE": "s3",
        "MINISPHERE_S3_BUCKET": SNAPSHOT_BUCKET,
        "MINISPHERE_S3_PREFIX": SNAPSHOT_PREFIX,
        "MINISPHERE_S3_ENDPOINT_URL": relay_url,
        "MINISPHERE_S3_REGION": "us-east-1",
        "MINISPHERE_S3_ACCESS_KEY_ID": "testing",
        "MINISPHERE_S3_SECRET_ACCESS_KEY": "testing",
    }


@pytest.fixture(scope="session")
def service(tmp_path_factory, s3_endpoint):
    ray = pytest.importorskip("ray")
    from ray import serve

    import serve_app
    from minisphere.settings import load_settings

    data_dir = tmp_path_factory.mktemp("service-data")
    port = free_port()
    # snapshots go to moto through a relay the durability tests can take down and bring back
    import boto3

    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").create_bucket(
        Bucket=SNAPSHOT_BUCKET
    )
    moto = urlparse(s3_endpoint)
    relay = TcpRelay(moto.hostname, moto.port).start()
    config = load_settings(service_env(data_dir, port, relay.url))
    owns_ray = not ray.is_initialized()  # another session fixture may have started it
    if owns_ray:  # the environment the launcher gives Ray, before it starts (see serve_app)
        serve_app.prepare_ray_env(front=config.http_front)
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            namespace=config.namespace,
            logging_level="WARNING",
            log_to_driver=False,
        )
    try:
        serve_app.start(config)
        yield {
            "url": f"http://127.0.0.1:{port}",
            "admin": ADMIN_TOKEN,
            "config": config,
            "data_dir": data_dir,
            "s3_relay": relay,
            "snapshots": {
                "endpoint": s3_endpoint,
                "bucket": SNAPSHOT_BUCKET,
                "prefix": SNAPSHOT_PREFIX,
            },
        }
    finally:
        try:
            if not owns_ray:  # the app off a Ray another fixture started and stops
                serve.shutdown()
        finally:
            if owns_ray:
                # every process of the service with it, the launcher's way: Serve's own
                # shutdown waits out a 30 s timeout for its controller first
                ray.shutdown()
                serve_app.release_ray_env()
            relay.stop()
            # the replication daemon the session's workspaces started outlives their actors
            from minisphere.durability.replication.daemon import LitestreamDaemon

            LitestreamDaemon(config.replication.daemon_dir).stop()


@pytest.fixture(scope="session")
def http(service):
    with httpx.Client(base_url=service["url"], timeout=60, transport=PatientTransport()) as client:
        yield client


@pytest.fixture(scope="session")
def admin_headers(service):
    return {"Authorization": f"Bearer {service['admin']}"}


@pytest.fixture
def new_workspace(http, admin_headers):
    """Create a workspace; returns (id, headers with its token). Deleted afterwards."""
    made = []

    def make(workspace_id: str | None = None):
        body = {"id": workspace_id} if workspace_id else {}
        response = http.post("/v1/workspaces", json=body, headers=admin_headers)
        assert response.status_code == 201, response.text
        created = response.json()
        made.append(created["workspace"]["id"])
        return created["workspace"]["id"], {"Authorization": f"Bearer {created['token']}"}

    yield make
    for workspace_id in made:
        http.delete(f"/v1/workspaces/{workspace_id}", headers=admin_headers)
