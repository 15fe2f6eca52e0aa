"""The deploy guard: what a `serve deploy` config may set in its application's `args`."""

from __future__ import annotations

from collections.abc import Mapping

from minisphere.errors import ConfigError
from minisphere.settings.table import ENV_VARS

# Never carried in a deploy config's `args`: Serve shows an application's args to anyone who
# can read its status, so secrets stay in the nodes' environment.
SECRET_ENV_NAMES = frozenset(
    {"MINISPHERE_ADMIN_TOKEN", "MINISPHERE_S3_ACCESS_KEY_ID", "MINISPHERE_S3_SECRET_ACCESS_KEY"}
)


def deploy_overrides(args: Mapping[str, object]) -> dict[str, str]:
    """The `MINISPHERE_*` settings a `serve deploy` config passes as its application's `args`,
    checked: only documented service variables, no secret, every value a string (numbers and
    booleans as YAML writes them are turned into their text). A mistyped name stops the deploy
    here, naming it, instead of being silently ignored."""
    known = {var.name for var in ENV_VARS}
    unknown = sorted(str(name) for name in args if name not in known)
    if unknown:
        raise ConfigError(
            f"unknown setting(s) in the application's args: {', '.join(unknown)} "
            "(see `minisphere settings`)"
        )
    secret = sorted(SECRET_ENV_NAMES & set(args))
    if secret:
        raise ConfigError(
            f"{', '.join(secret)} must come from the nodes' environment, not the "
            "deploy config (Serve shows an application's args)"
        )
    return {
        name: str(value).lower() if isinstance(value, bool) else str(value)
        for name, value in args.items()
    }
