"""The admin token: at least MIN_ADMIN_TOKEN_CHARS long, and MIN_REMOTE_ADMIN_TOKEN_CHARS off
loopback, where it is mandatory (the service refuses to start without it). On a loopback host
without MINISPHERE_ADMIN_TOKEN, a token is generated once and kept in `<data>/.admin_token`
(mode 0600), so every process of one deployment agrees on it."""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path

from minisphere.errors import ConfigError

MIN_ADMIN_TOKEN_CHARS = 16
# Off loopback anyone who can reach the port can guess: wrong guesses are rate limited per
# address, but many addresses guess in parallel, so the token itself must be out of reach
# (32 random URL-safe characters are about 190 bits).
MIN_REMOTE_ADMIN_TOKEN_CHARS = 32
ADMIN_TOKEN_FILE = ".admin_token"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_admin_token(token: str, host: str) -> None:
    """`ConfigError` unless `token` (MINISPHERE_ADMIN_TOKEN, '' when unset) may serve `host`:
    long enough, and present and longer still off loopback."""
    if token and len(token) < MIN_ADMIN_TOKEN_CHARS:
        raise ConfigError(
            f"MINISPHERE_ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_CHARS} characters"
        )
    if not token and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on non-loopback host {host!r} without "
            "MINISPHERE_ADMIN_TOKEN; set a long random admin token"
        )
    if not is_loopback(host) and len(token) < MIN_REMOTE_ADMIN_TOKEN_CHARS:
        raise ConfigError(
            f"refusing to listen on non-loopback host {host!r} with a {len(token)}-character "
            f"MINISPHERE_ADMIN_TOKEN: off loopback it must be at least "
            f'{MIN_REMOTE_ADMIN_TOKEN_CHARS} characters (e.g. python -c "import secrets; '
            'print(secrets.token_urlsafe(32))")'
        )


def stored_admin_token(data_dir: Path) -> tuple[str, str]:
    """Read `<data>/.admin_token`, creating it (exclusively, 0600) if absent."""
    path = data_dir / ADMIN_TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text(encoding="utf-8").strip()
        if len(token) < MIN_ADMIN_TOKEN_CHARS:
            raise ConfigError(
                f"{path} holds no usable admin token; delete it to regenerate"
            ) from None
        return token, "file"
    token = "msa_" + secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, "generated"
