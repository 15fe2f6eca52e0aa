"""A directory restarted after a crash adopts the actors the control plane names, and must not
hand out one that serves nothing: the control plane names a wake's actor before its bind is
sent, so a directory that died in between left a name whose process never opened the workspace.
Adopted as resident, every call to it was refused as `hibernating` and sent back to it, until
the callers gave up."""

from __future__ import annotations

import asyncio

from tests.directory.test_directory_state import created, directory_parts


def restarted_with_a_spare_named(tmp_path, name: str):
    """(restarted parts, control, the workspace, the spare) after a directory named a spare for
    the workspace and died before sending its bind; the new directory has adopted it."""
    parts, control, runtime = directory_parts(tmp_path)
    (workspace_id,) = created(parts, name)
    orphan = runtime.start("workspace-actor:named-then-the-crash", {})
    control.set_actor(workspace_id, orphan.name)  # its bind never sent: still a spare
    restarted, _, _ = directory_parts(tmp_path, control=control, runtime=runtime)
    assert restarted.residents.adopt() == 0
    return restarted, control, workspace_id, orphan


def test_an_adopted_actor_that_serves_nothing_is_let_go_not_handed_out(tmp_path):
    restarted, control, workspace_id, orphan = restarted_with_a_spare_named(
        tmp_path, "named-before-its-bind"
    )

    async def call_refused_then_woken():
        # the caller was refused (`hibernating`) and says so as it asks again
        return await restarted.activator.activate(workspace_id, caller_saw_failure=True)

    woken = asyncio.run(call_refused_then_woken())
    assert woken is not orphan and orphan.killed
    assert woken.host.workspace.get_count() == {"count": 0}
    assert dict(control.bound_actors())[workspace_id] == woken.name


def test_an_adopted_actor_that_serves_its_workspace_stays_resident(tmp_path):
    parts, control, runtime = directory_parts(tmp_path)

    async def before_the_crash():
        (workspace_id,) = created(parts, "kept")
        actor = await parts.activator.activate(workspace_id)
        actor.host.workspace.capture("written before the directory died")
        return workspace_id, actor

    workspace_id, actor = asyncio.run(before_the_crash())
    restarted, _, _ = directory_parts(tmp_path, control=control, runtime=runtime)
    restarted.residents.adopt()
    assert asyncio.run(restarted.residents.confirm_adopted()) == []
    assert not actor.killed and not restarted.residents.get(workspace_id).adopted
    assert asyncio.run(restarted.activator.activate(workspace_id, True)) is actor
