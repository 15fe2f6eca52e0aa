"""Reading typed values from environment variables, with clear errors (config is loaded once)."""
from __future__ import annotations

from typing import Mapping


def env_number(env: Mapping[str, str], name: str, default, low, high, *, kind=int,
               error: type[Exception] = ValueError):
    """`env[name]` as a number in [low, high]; `default` when unset or blank; `error` otherwise."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        whole = " (an integer)" if kind is int else ""
        raise error(f"{name} must be a number{whole}, got {raw!r}") from None
    if not low <= value <= high:
        raise error(f"{name} must be between {low} and {high}, got {value}")
    return value
