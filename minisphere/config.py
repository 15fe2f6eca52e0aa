"""Service configuration, read once from the environment into a typed, immutable object.

| variable                    | default          | meaning                                         |
|-----------------------------|------------------|-------------------------------------------------|
| MINISPHERE_DATA_DIR         | ./data           | workspace files, control plane, admin token     |
| MINISPHERE_HOST             | 127.0.0.1        | HTTP bind address                               |
| MINISPHERE_PORT             | 8000             | HTTP port                                       |
| MINISPHERE_ADMIN_TOKEN      | (generated)      | admin bearer token; required off loopback       |
| MINISPHERE_RAY_NAMESPACE    | minisphere       | Ray namespace of the named, detached actors     |
| MINISPHERE_RAY_ADDRESS      | (local Ray)      | join an existing cluster instead               |
| MINISPHERE_SYNCHRONOUS      | FULL             | SQLite synchronous mode of workspace files      |
| MINISPHERE_MAX_BATCH        | 256              | most writes one group commit takes              |
| MINISPHERE_MIN_REPLICAS     | 1                | ingress autoscaling lower bound                 |
| MINISPHERE_MAX_REPLICAS     | 2                | ingress autoscaling upper bound                 |
| MINISPHERE_BLUEPRINT        | infra/blueprint.default.json | default workspace blueprint         |
| MINISPHERE_ACCESS_LOG       | 0                | 1: Serve logs every request (costs latency)     |

Durability settings (MINISPHERE_SNAPSHOT_*, MINISPHERE_S3_*, MINISPHERE_HIBERNATE_IDLE_S,
MINISPHERE_MAX_RESIDENT) are read by `durability_config.py` (its table) into `durability`.

On a loopback host without MINISPHERE_ADMIN_TOKEN, a token is generated once and kept in
`<data>/.admin_token` (mode 0600), so every process of one deployment agrees on it. Off
loopback the variable is mandatory: `load_config` refuses to produce a config without it.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping

from .durability_config import DurabilityConfigError, load_durability_config
from .env_values import env_number

ADMIN_TOKEN_FILE = ".admin_token"
DEFAULT_BLUEPRINT = Path(__file__).resolve().parent.parent / "infra" / "blueprint.default.json"


class ConfigError(RuntimeError):
    """The configuration cannot be used; the service must not start."""


@dataclass(frozen=True)
class ServiceConfig:
    data_dir: str
    host: str = "127.0.0.1"
    port: int = 8000
    admin_token: str = ""
    admin_token_source: str = "env"         # env | file | generated
    namespace: str = "minisphere"
    ray_address: str = ""
    synchronous: str = "FULL"
    max_batch: int = 256
    min_replicas: int = 1
    max_replicas: int = 2
    blueprint_path: str = str(DEFAULT_BLUEPRINT)
    token_cache_ttl_s: float = 30.0
    access_log: bool = False
    durability: dict = field(default_factory=dict)   # DurabilityConfig.to_dict()

    @property
    def workspaces_dir(self) -> Path:
        return Path(self.data_dir) / "workspaces"

    @property
    def control_db(self) -> Path:
        return Path(self.data_dir) / "control.db"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> "ServiceConfig":
        return cls(**dict(data))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    return env_number(env, name, default, low, high, error=ConfigError)


def stored_admin_token(data_dir: Path) -> tuple[str, str]:
    """Read `<data>/.admin_token`, creating it (exclusively, 0600) if absent."""
    path = data_dir / ADMIN_TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text(encoding="utf-8").strip()
        if len(token) < 16:
            raise ConfigError(f"{path} holds no usable admin token; delete it to regenerate")
        return token, "file"
    token = "msa_" + secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, "generated"


def load_config(env: Mapping[str, str] | None = None) -> ServiceConfig:
    env = os.environ if env is None else env
    data_dir = Path(env.get("MINISPHERE_DATA_DIR") or "data").expanduser().resolve()
    host = env.get("MINISPHERE_HOST") or "127.0.0.1"
    synchronous = (env.get("MINISPHERE_SYNCHRONOUS") or "FULL").upper()
    if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ConfigError(f"MINISPHERE_SYNCHRONOUS must be OFF, NORMAL, FULL or EXTRA, "
                          f"got {synchronous!r}")
    token, source = (env.get("MINISPHERE_ADMIN_TOKEN") or "").strip(), "env"
    if token and len(token) < 16:
        raise ConfigError("MINISPHERE_ADMIN_TOKEN must be at least 16 characters")
    if not token and not is_loopback(host):
        raise ConfigError(f"refusing to listen on non-loopback host {host!r} without "
                          "MINISPHERE_ADMIN_TOKEN; set a long random admin token")
    port = _int(env, "MINISPHERE_PORT", 8000, 1, 65535)
    max_batch = _int(env, "MINISPHERE_MAX_BATCH", 256, 1, 10_000)
    min_replicas = _int(env, "MINISPHERE_MIN_REPLICAS", 1, 1, 64)
    max_replicas = _int(env, "MINISPHERE_MAX_REPLICAS", max(2, min_replicas), min_replicas, 64)
    try:
        durability = load_durability_config(data_dir, env)
    except DurabilityConfigError as exc:
        raise ConfigError(str(exc)) from None
    data_dir.mkdir(parents=True, exist_ok=True)     # only once everything else is valid
    if not token:
        token, source = stored_admin_token(data_dir)
    return ServiceConfig(
        data_dir=str(data_dir), host=host, port=port, admin_token=token,
        admin_token_source=source, namespace=env.get("MINISPHERE_RAY_NAMESPACE") or "minisphere",
        ray_address=env.get("MINISPHERE_RAY_ADDRESS") or "", synchronous=synchronous,
        max_batch=max_batch, min_replicas=min_replicas, max_replicas=max_replicas,
        blueprint_path=env.get("MINISPHERE_BLUEPRINT") or str(DEFAULT_BLUEPRINT),
        access_log=(env.get("MINISPHERE_ACCESS_LOG") or "0").strip().lower() in ("1", "true",
                                                                                  "yes"),
        durability=durability.to_dict())
