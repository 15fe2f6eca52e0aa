"""The one way Mini-Sphere makes a boto3 S3 client (snapshot store and contract evidence).

Short connect timeouts and a bounded number of attempts, so a dead endpoint fails fast instead
of holding a snapshot or a CLI command for minutes. Credentials: the settings' access key pair
when given, else boto3's usual chain (`AWS_*` variables, shared config, instance role). A custom
endpoint (MinIO, moto) gets path-style addressing.
"""

from __future__ import annotations

from typing import Any

from minisphere.durability.constants import (
    S3_CONNECT_TIMEOUT_S,
    S3_DEFAULT_REGION,
    S3_MAX_ATTEMPTS,
    S3_READ_TIMEOUT_S,
)
from minisphere.settings import S3Settings


def make_s3_client(
    settings: S3Settings,
    *,
    connect_timeout_s: float = S3_CONNECT_TIMEOUT_S,
    read_timeout_s: float = S3_READ_TIMEOUT_S,
    max_attempts: int = S3_MAX_ATTEMPTS,
) -> Any:
    """A boto3 S3 client (untyped: boto3 ships no type information)."""
    import boto3
    from botocore.config import Config

    endpoint = settings.endpoint_url or None
    config = Config(
        connect_timeout=connect_timeout_s,
        read_timeout=read_timeout_s,
        retries={"max_attempts": max_attempts, "mode": "standard"},
        s3={"addressing_style": "path"} if endpoint else None,
    )
    session = boto3.session.Session()
    return session.client(
        "s3",
        endpoint_url=endpoint,
        region_name=settings.region or session.region_name or S3_DEFAULT_REGION,
        aws_access_key_id=settings.access_key_id or None,
        aws_secret_access_key=settings.secret_access_key or None,
        config=config,
    )
