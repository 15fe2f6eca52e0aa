"""The gateway protocols of the HTTP layer: complete (every gateway method the layer calls is in
them, its durability operations' included), and implemented by the tests' in-process gateway;
the check itself names what a class lacks. (The service's gateway, over Ray:
tests/actors/test_actor_protocols.py.)"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

import minisphere.http
from minisphere.http.gateway_protocol import DurabilityOperations, WorkspaceGateway
from tests.support.engine_gateway import EngineDurability, EngineGateway
from tests.support.protocols import protocol_gaps, protocol_methods

HTTP_LAYER = Path(minisphere.http.__file__).parent
# `gateway.x(`, `self.gateway.x(`, `call.gateway.x(`: a method the HTTP layer calls
GATEWAY_CALL = re.compile(r"\bgateway\.([a-z_]+)\(")
DURABILITY_CALL = re.compile(r"\bgateway\.durability_admin\.([a-z_]+)\(")


def test_the_in_process_gateway_lacks_no_method_of_the_protocol():
    assert protocol_gaps(WorkspaceGateway, EngineGateway) == []
    assert protocol_gaps(DurabilityOperations, EngineDurability) == []


@pytest.mark.parametrize(
    ("calls", "protocol"),
    [(GATEWAY_CALL, WorkspaceGateway), (DURABILITY_CALL, DurabilityOperations)],
)
def test_every_gateway_method_the_http_layer_calls_is_in_its_protocol(calls, protocol):
    called = {
        name for source in HTTP_LAYER.rglob("*.py") for name in calls.findall(source.read_text())
    }
    assert called, f"the pattern no longer finds the HTTP layer's calls of {protocol.__name__}"
    assert called - set(protocol_methods(protocol)) == set()


def _bare_dicts(hint: object) -> list[object]:
    """The plain `dict` types inside an annotation (through lists, tuples and unions); a
    `TypedDict` is not one."""
    if typing.get_origin(hint) is dict or hint is dict:
        return [hint]
    return [bare for arg in typing.get_args(hint) for bare in _bare_dicts(arg)]


@pytest.mark.parametrize("protocol", [WorkspaceGateway, DurabilityOperations])
def test_no_answer_of_the_gateway_is_an_untyped_dict(protocol):
    untyped = {
        name: _bare_dicts(typing.get_type_hints(method)["return"])
        for name, method in protocol_methods(protocol).items()
    }
    assert {name: found for name, found in untyped.items() if found} == {}


def test_the_check_names_each_missing_method_and_each_call_a_method_cannot_take():
    class Partial:
        async def is_admin(self, token):  # async where the protocol's is not
            return False

        async def restore(self, workspace_id):  # the version argument is missing
            return {}

    gaps = "\n".join(
        protocol_gaps(WorkspaceGateway, Partial) + protocol_gaps(DurabilityOperations, Partial)
    )
    assert "Partial.list is missing" in gaps
    assert "Partial.is_admin must be a plain method" in gaps
    assert "Partial.restore(workspace_id) cannot be called with 2 positional" in gaps
