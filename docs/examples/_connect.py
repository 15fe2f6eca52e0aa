"""How the examples reach a workspace when run as scripts: the service and workspace the CLI
uses (MINISPHERE_URL, MINISPHERE_WORKSPACE, MINISPHERE_TOKEN). Start one with
`minisphere serve` and `minisphere ws create notes`. The tests call each example's `main`
with a live workspace of their own instead."""

from __future__ import annotations

import os

from minisphere.client import Client


def workspace_from_env():
    client = Client(os.environ.get("MINISPHERE_URL"))
    return client.workspace(os.environ["MINISPHERE_WORKSPACE"], os.environ["MINISPHERE_TOKEN"])
