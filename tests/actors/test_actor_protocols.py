"""The declared interfaces between the actors' parts: both gateways implement the HTTP layer's
protocol, both actor runtimes the directory's, and every method name the actors are called by
(`minisphere/wire/actor_methods.py`) is a method of the actor class that must answer it. Imports only:
no Ray cluster is started."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import actors
from actors.directory.actor import DirectoryActor
from actors.directory.runtime import RayActors
from actors.ingress.durability_admin import DurabilityAdmin
from actors.ingress.gateway import Gateway
from actors.workspace.actor import SERVED_METHODS, WorkspaceActor
from actors.workspace.admin_methods import FILE_METHODS, AdminFiles
from minisphere.directory.actor_runtime import ActorRuntime
from minisphere.http.gateway_protocol import DurabilityOperations, WorkspaceGateway
from minisphere.wire.actor_methods import DirectoryMethod, ServedMethod, WorkspaceActorMethod
from tests.support.in_process_actors import InProcessActors, InProcessWorkspaceActor
from tests.support.protocols import protocol_gaps

ACTORS = Path(actors.__file__).parent
# calls that name an actor method: (function or method name, index of the name argument)
NAMED_CALLS = {"ask": 1, "ask_directory": 0, "actor_call": 1, "tell": 0}
RECEIVER_NAMED_CALLS = {("runtime", "call"): 1, ("reach", "call"): 1, ("serve", "remote"): 1}


def test_the_services_gateway_lacks_no_method_of_the_http_layers_protocol():
    assert protocol_gaps(WorkspaceGateway, Gateway) == []
    assert protocol_gaps(DurabilityOperations, DurabilityAdmin) == []


@pytest.mark.parametrize("runtime", [RayActors, InProcessActors])
def test_each_actor_runtime_lacks_no_method_of_the_directorys_protocol(runtime):
    assert protocol_gaps(ActorRuntime, runtime) == []


def _public_methods(actor_class) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(actor_class.__ray_actor_class__, inspect.isfunction)
        if not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("names", "actor_class"),
    [(WorkspaceActorMethod, WorkspaceActor), (DirectoryMethod, DirectoryActor)],
)
def test_every_method_name_the_actors_are_called_by_is_a_method_of_the_actor(names, actor_class):
    assert {str(m) for m in names} - _public_methods(actor_class) == set()


def test_every_served_method_is_answered_by_the_actor_or_its_file_operations():
    files = {name for name, _ in inspect.getmembers(AdminFiles, inspect.isfunction)}
    assert {str(m) for m in FILE_METHODS} - files == set()
    assert {str(m) for m in ServedMethod if m not in FILE_METHODS} - _public_methods(
        WorkspaceActor
    ) == set()


def test_the_in_process_actor_answers_what_the_directory_calls_on_a_workspace_actor():
    defined = {name for name, _ in inspect.getmembers(InProcessWorkspaceActor, inspect.isfunction)}
    assert {str(m) for m in WorkspaceActorMethod} - defined == set()


def test_the_workspace_actor_serves_exactly_the_served_methods():
    assert {str(m) for m in ServedMethod} == SERVED_METHODS


def _method_name_literals(tree: ast.AST):
    """Each string literal passed where an actor call names its method."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        index = None
        if isinstance(func, ast.Name):
            index = NAMED_CALLS.get(func.id)
        elif isinstance(func, ast.Attribute):
            index = NAMED_CALLS.get(func.attr)
            receiver = func.value
            owner = (
                receiver.attr
                if isinstance(receiver, ast.Attribute)
                else getattr(receiver, "id", None)
            )
            index = RECEIVER_NAMED_CALLS.get((owner, func.attr), index)
        if index is not None and len(node.args) > index:
            arg = node.args[index]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield node.lineno, arg.value


def test_no_actor_call_names_its_method_with_a_bare_string():
    found = [
        f"{path.relative_to(ACTORS.parent)}:{line}: {name!r}"
        for path in sorted(ACTORS.rglob("*.py"))
        for line, name in _method_name_literals(ast.parse(path.read_text()))
    ]
    assert found == [], "name the method with its member of minisphere/wire/actor_methods.py"


def test_every_method_member_the_actors_name_exists():
    # the call sites are outside mypy's list: a misspelt member would fail only when run
    enums = {
        names.__name__: names for names in (DirectoryMethod, ServedMethod, WorkspaceActorMethod)
    }
    wrong = [
        f"{path.relative_to(ACTORS.parent)}:{node.lineno}: {node.value.id}.{node.attr}"
        for path in sorted(ACTORS.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in enums
        and node.attr not in enums[node.value.id].__members__
    ]
    assert wrong == []
