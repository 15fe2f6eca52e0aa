"""operate/settings.md: the tables of environment variables, from `minisphere.settings` (the
same text `minisphere settings` and `minisphere settings --client` print)."""

from __future__ import annotations

from docs.generate import notice
from minisphere.settings import CLIENT_ENV_VARS, ENV_VARS, env_table_markdown

SERVICE_MARK = "<!-- service settings: minisphere settings -->"
CLIENT_MARK = "<!-- client settings: minisphere settings --client -->"


def pages() -> dict[str, str]:
    text = f"""{notice("minisphere/settings/table.py")}
# Settings

Every setting is an environment variable, read once into one typed settings object
(`minisphere/settings/`). `minisphere settings` prints the first table from the code and
`minisphere settings --client` the second; this page is made from the same code, and a test
fails when it differs.

## The service

{SERVICE_MARK}
{env_table_markdown(ENV_VARS)}

The snapshot variables are explained in [Durability](durability.md) and
[Backups and restores](backups.md), the hibernation and spare-pool variables in
[Serverless](serverless.md), the replication variables in [Durability](durability.md).

## The client and the CLI

{CLIENT_MARK}
{env_table_markdown(CLIENT_ENV_VARS)}
"""
    return {"operate/settings.md": text}
