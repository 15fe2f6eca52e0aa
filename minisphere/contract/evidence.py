"""Contract evidence snapshots in an S3-compatible object store (boto3).

For each pinned contract file the store receives two objects under `<prefix>/contracts/`:

    <prefix>/contracts/MINI_SPHERE_CONTRACT@0.1.md          the exact bytes
    <prefix>/contracts/MINI_SPHERE_CONTRACT@0.1.md.sha256   the pin, sha256sum format

A push is idempotent and append-only per version: an object that already holds the same bytes
is reported `unchanged`; an object holding *different* bytes for the same name is never
overwritten (`EvidenceConflict`), and in that case nothing at all is uploaded. After uploading,
every object is downloaded again and re-hashed against the local pin.

Where: the command's flags, else the service's S3 settings (`MINISPHERE_S3_*`, see
`minisphere.settings`: bucket, endpoint, region and credentials, with boto3's usual chain when
no key pair is set); the client is the one `durability.s3.make_s3_client` builds.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from minisphere.contract.pins import find_contracts_dir, pin_path, pinned_contracts, read_pin
from minisphere.durability.s3 import make_s3_client
from minisphere.errors import (
    ContractPinError,
    EvidenceConflict,
    EvidenceError,
    EvidenceUnreachable,
    EvidenceVerifyError,
)
from minisphere.settings import S3Settings, env_value, load_s3_settings

ENV_ENDPOINT = "MINISPHERE_S3_ENDPOINT_URL"
ENV_BUCKET = "MINISPHERE_S3_BUCKET"
ENV_PREFIX = "MINISPHERE_S3_PREFIX"
EVIDENCE_FOLDER = "contracts"
# a boto3 S3 client: boto3 ships no type information
S3Client = Any
ContractsDir = str | os.PathLike[str] | None


class EvidenceFile(TypedDict):
    """A verified local contract file to snapshot, with its pin."""

    file: str
    path: Path
    sha256: str
    pin_file: str
    pin_bytes: bytes


class CheckedEvidence(TypedDict):
    file: str
    key: str
    sha256: str


class PushedEvidence(CheckedEvidence):
    status: str  # uploaded | unchanged


@dataclass(frozen=True)
class EvidenceTarget:
    bucket: str
    prefix: str = ""
    endpoint_url: str | None = None
    region: str = ""
    access_key_id: str = ""
    secret_access_key: str = ""

    @classmethod
    def from_settings(
        cls, bucket: str | None = None, prefix: str | None = None, endpoint_url: str | None = None
    ) -> EvidenceTarget:
        """Flags first, then the service's own S3 settings (the same variables and
        credentials as the snapshot store). Unlike snapshots, no prefix is assumed."""
        s3 = load_s3_settings()
        bucket = bucket or s3.bucket
        if not bucket:
            raise EvidenceError(f"no evidence bucket: pass --bucket or set {ENV_BUCKET}")
        if prefix is None:
            prefix = env_value(ENV_PREFIX)
        return cls(
            bucket=bucket,
            prefix=prefix.strip("/"),
            endpoint_url=endpoint_url or s3.endpoint_url or None,
            region=s3.region,
            access_key_id=s3.access_key_id,
            secret_access_key=s3.secret_access_key,
        )

    def key(self, file_name: str) -> str:
        parts = [self.prefix] if self.prefix else []
        return "/".join([*parts, EVIDENCE_FOLDER, file_name])

    def describe(self) -> str:
        where = self.endpoint_url or "AWS S3"
        return f"s3://{self.bucket}/{self.key('')} at {where}"


def make_client(target: EvidenceTarget) -> S3Client:
    return make_s3_client(
        S3Settings(
            bucket=target.bucket,
            prefix=target.prefix,
            endpoint_url=target.endpoint_url or "",
            region=target.region,
            access_key_id=target.access_key_id,
            secret_access_key=target.secret_access_key,
        )
    )


def _translate(exc: Exception, target: EvidenceTarget, action: str) -> EvidenceError:
    """botocore exceptions -> named, readable evidence errors."""
    from botocore import exceptions as bx

    if isinstance(
        exc,
        (
            bx.EndpointConnectionError,
            bx.ConnectTimeoutError,
            bx.ReadTimeoutError,
            bx.ConnectionClosedError,
        ),
    ):
        return EvidenceUnreachable(
            f"cannot reach the S3 endpoint {target.endpoint_url or 'of AWS'} while trying to "
            f"{action}: {exc}. Check {ENV_ENDPOINT} / --endpoint-url and that the store is up"
        )
    if isinstance(exc, bx.NoCredentialsError):
        return EvidenceError(
            f"no S3 credentials to {action}: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or another boto3 credential source)"
        )
    if isinstance(exc, bx.ClientError):
        code = exc.response.get("Error", {}).get("Code", "?")
        message = exc.response.get("Error", {}).get("Message", "")
        if code == "NoSuchBucket":
            return EvidenceError(
                f"bucket {target.bucket!r} does not exist at "
                f"{target.endpoint_url or 'AWS S3'}; create it first"
            )
        return EvidenceError(f"S3 refused to {action} ({code}): {message}")
    if isinstance(exc, bx.BotoCoreError):
        return EvidenceError(f"S3 client error while trying to {action}: {exc}")
    raise exc


def _get(client: S3Client, target: EvidenceTarget, key: str) -> bytes | None:
    """The object's bytes, or None when there is no such key."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = client.get_object(Bucket=target.bucket, Key=key)
        body: bytes = response["Body"].read()
        return body
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise _translate(exc, target, f"read {key}") from None
    except BotoCoreError as exc:
        raise _translate(exc, target, f"read {key}") from None


def _put(client: S3Client, target: EvidenceTarget, key: str, body: bytes, sha256_hex: str) -> bool:
    """Create the object only if absent. Returns False when someone else created it first."""
    from botocore.exceptions import BotoCoreError, ClientError

    kwargs = dict(
        Bucket=target.bucket,
        Key=key,
        Body=body,
        Metadata={"sha256": sha256_hex},
        ContentType="text/markdown; charset=utf-8"
        if key.endswith(".md")
        else "application/json"
        if key.endswith(".json")
        else "text/plain",
    )
    try:
        client.put_object(IfNoneMatch="*", **kwargs)
        return True
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
            return False
        if code != "NotImplemented":
            raise _translate(exc, target, f"upload {key}") from None
    except BotoCoreError as exc:
        raise _translate(exc, target, f"upload {key}") from None
    # A store without conditional writes: we already checked the key was absent.
    try:
        client.put_object(**kwargs)
        return True
    except (ClientError, BotoCoreError) as exc:
        raise _translate(exc, target, f"upload {key}") from None


def evidence_files(
    contracts_dir: ContractsDir = None, *, all_versions: bool = False
) -> list[EvidenceFile]:
    """Verified local files to snapshot: [{file, path, sha256, pin_path, pin_bytes}].

    Pins are verified first (a mismatch raises ContractPinError): evidence is only ever taken
    of pinned bytes. By default only the active contract version; `all_versions` adds the rest.
    """
    directory = find_contracts_dir(contracts_dir)
    files: list[EvidenceFile] = []
    for record in pinned_contracts(directory):
        if not (record["active"] or all_versions):
            continue
        path = directory / record["file"]
        pin = pin_path(path)
        files.append(
            {
                "file": record["file"],
                "path": path,
                "sha256": record["sha256"],
                "pin_file": pin.name,
                "pin_bytes": pin.read_bytes(),
            }
        )
    return files


def _objects(files: list[EvidenceFile]) -> list[tuple[str, str, bytes]]:
    """(file name, kind, bytes): each body followed by its pin, so a pin is never stored
    without the body it vouches for."""
    out: list[tuple[str, str, bytes]] = []
    for item in files:
        body = item["path"].read_bytes()
        actual = hashlib.sha256(body).hexdigest()
        if actual != item["sha256"]:  # changed on disk since the pins were verified
            raise ContractPinError(
                f"contract {item['file']} changed while pushing: pinned "
                f"sha256 {item['sha256']}, file sha256 {actual}",
                file=item["file"],
                expected=item["sha256"],
                actual=actual,
            )
        out.append((item["file"], "body", body))
        out.append((item["pin_file"], "pin", item["pin_bytes"]))
    return out


def push_evidence(
    target: EvidenceTarget,
    contracts_dir: ContractsDir = None,
    *,
    all_versions: bool = False,
    client: S3Client = None,
) -> list[PushedEvidence]:
    """Upload the contract files and their pins, then download and re-hash them.

    Returns [{file, key, sha256, status}] with status `uploaded` or `unchanged`. Raises
    EvidenceConflict (nothing uploaded) when the store holds different bytes for a file,
    EvidenceUnreachable when the endpoint cannot be reached, EvidenceVerifyError when a
    read-back does not match.
    """
    files = evidence_files(contracts_dir, all_versions=all_versions)
    client = client or make_client(target)
    objects = _objects(files)
    plan: list[tuple[str, str, bytes, str]] = []
    conflicts: list[str] = []
    for name, _kind, body in objects:
        key = target.key(name)
        stored = _get(client, target, key)
        if stored is None:
            plan.append((name, key, body, "upload"))
        elif stored == body:
            plan.append((name, key, body, "unchanged"))
        else:
            conflicts.append(
                f"{key} already holds different bytes (stored sha256 "
                f"{hashlib.sha256(stored).hexdigest()}, local sha256 "
                f"{hashlib.sha256(body).hexdigest()})"
            )
    if conflicts:
        raise EvidenceConflict(
            f"refusing to overwrite evidence in {target.describe()}: "
            + "; ".join(conflicts)
            + ". A published contract version is immutable; amend by bumping the version"
        )
    results: list[PushedEvidence] = []
    for name, key, body, action in plan:
        status = "unchanged"
        if action == "upload":
            digest = hashlib.sha256(body).hexdigest()
            if _put(client, target, key, body, digest):
                status = "uploaded"
            else:  # created concurrently: fine only if it is the same bytes
                stored = _get(client, target, key)
                if stored != body:
                    raise EvidenceConflict(
                        f"{key} was written concurrently with different "
                        "bytes; refusing to overwrite"
                    )
        results.append(
            {"file": name, "key": key, "sha256": hashlib.sha256(body).hexdigest(), "status": status}
        )
    verify_evidence(target, contracts_dir, all_versions=all_versions, client=client, files=files)
    return results


def verify_evidence(
    target: EvidenceTarget,
    contracts_dir: ContractsDir = None,
    *,
    all_versions: bool = False,
    client: S3Client = None,
    files: list[EvidenceFile] | None = None,
) -> list[CheckedEvidence]:
    """Download every evidence object and check it against the local pins.

    Returns [{file, key, sha256}] for the bodies; raises EvidenceVerifyError on any missing or
    differing object.
    """
    files = files if files is not None else evidence_files(contracts_dir, all_versions=all_versions)
    client = client or make_client(target)
    checked: list[CheckedEvidence] = []
    for item in files:
        body_key, pin_key = target.key(item["file"]), target.key(item["pin_file"])
        body = _get(client, target, body_key)
        if body is None:
            raise EvidenceVerifyError(f"{body_key} is missing from {target.describe()}")
        actual = hashlib.sha256(body).hexdigest()
        if actual != item["sha256"]:
            raise EvidenceVerifyError(
                f"{body_key} hashes to {actual}, but the pin says {item['sha256']}"
            )
        stored_pin = _get(client, target, pin_key)
        if stored_pin is None:
            raise EvidenceVerifyError(f"{pin_key} is missing from {target.describe()}")
        if stored_pin != item["pin_bytes"]:
            raise EvidenceVerifyError(f"{pin_key} differs from the local pin {item['pin_file']}")
        if read_pin(item["path"].with_name(item["pin_file"]), item["file"]) != actual:
            raise EvidenceVerifyError(f"local pin {item['pin_file']} does not match {body_key}")
        checked.append({"file": item["file"], "key": body_key, "sha256": actual})
    return checked
