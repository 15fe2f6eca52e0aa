"""Helpers of the end-to-end tests: finding the actor that holds a workspace right now."""
from __future__ import annotations

import ray

from actors.directory_actor import DIRECTORY_NAME


def directory_of(service):
    return ray.get_actor(DIRECTORY_NAME, namespace=service["config"].namespace)


def workspace_actor(service, workspace_id: str):
    """The live actor holding the workspace, or None (hibernated, killed, never woken).
    Actor names are random and permanent; the directory knows which one holds it."""
    name = ray.get(directory_of(service).actor_name_of.remote(workspace_id), timeout=30)
    if name is None:
        return None
    try:
        return ray.get_actor(name, namespace=service["config"].namespace)
    except ValueError:
        return None
