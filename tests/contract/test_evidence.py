"""Evidence snapshots against a real S3-protocol server on loopback (moto server mode)."""

import hashlib
import socket
import time

import boto3
import pytest

from minisphere.cli.main import main
from minisphere.contract.evidence import (
    EvidenceConflict,
    EvidenceError,
    EvidenceTarget,
    EvidenceUnreachable,
    EvidenceVerifyError,
    make_client,
    push_evidence,
    verify_evidence,
)
from minisphere.contract.pins import ContractPinError
from tests.support.contracts import SURFACE, TEXT

FILES = [TEXT, f"{TEXT}.sha256", SURFACE, f"{SURFACE}.sha256"]


@pytest.fixture
def s3(s3_endpoint):
    return boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")


@pytest.fixture
def target(s3_endpoint, fresh_bucket):
    return EvidenceTarget(bucket=fresh_bucket, prefix="evidence/ms", endpoint_url=s3_endpoint)


def stored(s3, target, name):
    return s3.get_object(Bucket=target.bucket, Key=target.key(name))["Body"].read()


def test_push_uploads_files_and_pins_then_second_push_is_unchanged(s3, target, contracts_copy):
    first = push_evidence(target)
    assert [r["file"] for r in first] == FILES
    assert {r["status"] for r in first} == {"uploaded"}
    assert [r["key"] for r in first] == [f"evidence/ms/contracts/{f}" for f in FILES]
    for name in FILES:
        assert stored(s3, target, name) == (contracts_copy / name).read_bytes()
    head = s3.head_object(Bucket=target.bucket, Key=target.key(TEXT))
    assert (
        head["Metadata"]["sha256"]
        == hashlib.sha256((contracts_copy / TEXT).read_bytes()).hexdigest()
    )

    second = push_evidence(target)
    assert {r["status"] for r in second} == {"unchanged"}
    assert [r["sha256"] for r in second] == [r["sha256"] for r in first]
    assert len(verify_evidence(target)) == 2


def test_refuses_to_overwrite_a_different_body_and_uploads_nothing(s3, target, contracts_copy):
    s3.put_object(Bucket=target.bucket, Key=target.key(TEXT), Body=b"someone else's 0.1\n")
    with pytest.raises(EvidenceConflict) as caught:
        push_evidence(target)
    message = str(caught.value)
    assert target.key(TEXT) in message and "refusing to overwrite" in message
    assert hashlib.sha256(b"someone else's 0.1\n").hexdigest() in message
    assert hashlib.sha256((contracts_copy / TEXT).read_bytes()).hexdigest() in message
    assert caught.value.code == "evidence_conflict"
    assert stored(s3, target, TEXT) == b"someone else's 0.1\n"
    listed = s3.list_objects_v2(Bucket=target.bucket).get("Contents", [])
    assert [o["Key"] for o in listed] == [target.key(TEXT)]


def test_partial_earlier_push_is_completed(s3, target, contracts_copy):
    s3.put_object(
        Bucket=target.bucket, Key=target.key(TEXT), Body=(contracts_copy / TEXT).read_bytes()
    )
    statuses = {r["file"]: r["status"] for r in push_evidence(target)}
    assert statuses == {
        TEXT: "unchanged",
        f"{TEXT}.sha256": "uploaded",
        SURFACE: "uploaded",
        f"{SURFACE}.sha256": "uploaded",
    }


def test_verify_evidence_detects_a_tampered_object(s3, target, contracts_copy):
    push_evidence(target)
    s3.put_object(Bucket=target.bucket, Key=target.key(SURFACE), Body=b"{}")
    with pytest.raises(EvidenceVerifyError, match="hashes to"):
        verify_evidence(target)


def test_verify_evidence_reports_missing_objects(target, contracts_copy):
    with pytest.raises(EvidenceVerifyError, match="is missing"):
        verify_evidence(target)


def test_never_pushes_bytes_that_do_not_match_their_pin(s3, target, contracts_copy):
    (contracts_copy / TEXT).write_bytes((contracts_copy / TEXT).read_bytes() + b" ")
    with pytest.raises(ContractPinError):
        push_evidence(target)
    assert s3.list_objects_v2(Bucket=target.bucket).get("KeyCount", 0) == 0


def test_missing_bucket_is_a_clear_error(s3_endpoint, contracts_copy):
    target = EvidenceTarget(bucket="no-such-bucket-here", endpoint_url=s3_endpoint)
    with pytest.raises(EvidenceError, match="bucket 'no-such-bucket-here' does not exist"):
        push_evidence(target)


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_endpoint_fails_fast_with_a_clear_error(s3_endpoint, contracts_copy):
    url = f"http://127.0.0.1:{closed_loopback_port()}"
    target = EvidenceTarget(bucket="any", endpoint_url=url)
    # the client is made before the clock starts: loading botocore's models is CPU work that a
    # busy machine stretches, and this checks the refused connection's few bounded attempts
    client = make_client(target)
    started = time.monotonic()
    with pytest.raises(EvidenceUnreachable) as caught:
        push_evidence(target, client=client)
    assert time.monotonic() - started < 10
    assert url in str(caught.value) and "cannot reach the S3 endpoint" in str(caught.value)
    assert caught.value.code == "evidence_unreachable"


def test_key_layout_without_prefix():
    assert EvidenceTarget(bucket="b").key(TEXT) == f"contracts/{TEXT}"
    assert EvidenceTarget(bucket="b", prefix="a/b").key(TEXT) == f"a/b/contracts/{TEXT}"


def test_settings_come_from_environment(monkeypatch):
    monkeypatch.setenv("MINISPHERE_S3_BUCKET", "env-bucket")
    monkeypatch.setenv("MINISPHERE_S3_PREFIX", "/p/q/")
    monkeypatch.setenv("MINISPHERE_S3_ENDPOINT_URL", "http://127.0.0.1:9")
    target = EvidenceTarget.from_settings()
    assert (target.bucket, target.prefix, target.endpoint_url) == (
        "env-bucket",
        "p/q",
        "http://127.0.0.1:9",
    )
    assert EvidenceTarget.from_settings(bucket="flag").bucket == "flag"
    monkeypatch.delenv("MINISPHERE_S3_BUCKET")
    with pytest.raises(EvidenceError, match="MINISPHERE_S3_BUCKET"):
        EvidenceTarget.from_settings()


def test_cli_push_and_verify_evidence(
    s3_endpoint, fresh_bucket, contracts_copy, capsys, monkeypatch
):
    monkeypatch.setenv("MINISPHERE_S3_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("MINISPHERE_S3_BUCKET", fresh_bucket)
    assert main(["contracts", "push-evidence", "--prefix", "ev"]) == 0
    out = capsys.readouterr().out
    assert out.count("uploaded ") == 4 and f"ev/contracts/{TEXT}" in out

    assert main(["contracts", "push-evidence", "--prefix", "ev"]) == 0
    assert "0 uploaded, 4 unchanged" in capsys.readouterr().out

    assert main(["contracts", "verify-evidence", "--prefix", "ev"]) == 0
    assert "2 contract file(s) and their pins match" in capsys.readouterr().out


def test_cli_push_refusal_and_unreachable_exit_1(
    s3_endpoint, s3, fresh_bucket, contracts_copy, capsys
):
    s3.put_object(Bucket=fresh_bucket, Key=f"contracts/{SURFACE}.sha256", Body=b"x")
    code = main(
        [
            "contracts",
            "push-evidence",
            "--bucket",
            fresh_bucket,
            "--prefix",
            "",
            "--endpoint-url",
            s3_endpoint,
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "refusing to overwrite" in err and f"contracts/{SURFACE}.sha256" in err

    url = f"http://127.0.0.1:{closed_loopback_port()}"
    code = main(["contracts", "push-evidence", "--bucket", "b", "--endpoint-url", url])
    assert code == 1 and "cannot reach the S3 endpoint" in capsys.readouterr().err


class RacingClient:
    """Another writer creates `key` right after our existence check saw it absent."""

    def __init__(self, real, key, body):
        self.real, self.key, self.body, self.raced = real, key, body, False

    def get_object(self, **kwargs):
        if kwargs["Key"] == self.key and not self.raced:
            from botocore.exceptions import ClientError

            self.raced = True
            self.real.put_object(Bucket=kwargs["Bucket"], Key=self.key, Body=self.body)
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": ""}}, "GetObject")
        return self.real.get_object(**kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_concurrent_writer_with_different_bytes_is_a_conflict(s3, target, contracts_copy):
    racing = RacingClient(s3, target.key(TEXT), b"the other writer's text")
    with pytest.raises(EvidenceConflict, match="written concurrently"):
        push_evidence(target, client=racing)
    assert stored(s3, target, TEXT) == b"the other writer's text"


def test_concurrent_writer_with_same_bytes_is_unchanged(s3, target, contracts_copy):
    racing = RacingClient(s3, target.key(TEXT), (contracts_copy / TEXT).read_bytes())
    statuses = {r["file"]: r["status"] for r in push_evidence(target, client=racing)}
    assert statuses[TEXT] == "unchanged" and statuses[SURFACE] == "uploaded"
