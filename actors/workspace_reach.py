"""Reaching a workspace's actor from another process: find it through the directory, call it,
and follow it when it hibernates or dies. Used by the ingress (every HTTP call) and by the
scheduled-tasks actor (staleness passes), so both recover the same way.

Every workspace-actor method answers a `Reply` (done with a value, or refused with a named
error), so an engine error is told apart from a failure of the actor itself:

- the reply says `hibernating`: the actor refused the call before touching anything (it is
  hibernating, or it has since become a spare or serves another workspace: every call goes
  through its `serve` gate, which names the workspace meant), so it is sent again, to the
  re-activated workspace (until `deadline_s`);
- the actor died: the workspace is re-activated at once (a workspace deleted meanwhile answers
  404 there). The call is sent again when that is safe: within the caller's
  `idempotent_attempts`, or when the directory says the actor ended by a clean hibernation
  (then the call never ran). Otherwise its outcome is unknown: `WorkspaceUnavailable`;
- the actor did not answer within `timeout_s`: the call may still be running (or may have run)
  in a live actor, and a hibernation that ends the actor cleanly drains it first, so a clean
  end says nothing about it. It is sent again only within `idempotent_attempts` (reads, keyed
  writes); a keyless write's outcome is unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import ray
from ray.exceptions import RayActorError, RayTaskError, TaskCancelledError

from actors.handles import Handle
from minisphere.errors import MiniSphereError, WorkspaceHibernating, WorkspaceUnavailable
from minisphere.reply import Reply
from minisphere.wire.actor_methods import DirectoryMethod, ServedMethod

log = logging.getLogger("minisphere.reach")
FOLLOW_HIBERNATION_S = 60.0  # how long a call may keep following a hibernating workspace
# A directory that does not answer (stalled, or its node gone) is a 503 to retry, never a
# request hung until the front's own 60 s limit answers a bare 408 for us.
DIRECTORY_ANSWER_TIMEOUT_S = 45.0
RESEND_PAUSE_S = 0.05  # pause before sending again (grows per attempt, up to 1 s)
RESEND_PAUSE_MAX_S = 1.0
KEYED_WRITE_RESENDS = 2  # a write with an idempotency key is sent up to 3 times
# A call reports how long it waited for its actor when that took any time: everything before
# the attempt that answered was sent -- a directory round trip, a wake, and an attempt on a
# cached handle whose actor had hibernated or died. A cached live handle is found in
# microseconds.
ACTIVATE_SHOWN_MS = 0.1
T = TypeVar("T")


def unwrap(exc: BaseException) -> BaseException:
    """The named error inside a Ray task error, when there is one."""
    if isinstance(exc, RayTaskError):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            return cause
    return exc


def _bounded(
    timeout_s: float | None,
    deadline: float,
    workspace_id: str,
    method: ServedMethod,
    unknown_outcome: str,
) -> float | None:
    """How long the next attempt may wait: `timeout_s`, and no later than the deadline; past
    it, the call ends here (an earlier attempt may have run it)."""
    if timeout_s is None:
        return None
    left_s = deadline - time.monotonic()
    if left_s <= 0:
        raise WorkspaceUnavailable(
            unknown_outcome
            or f"workspace {workspace_id} did not answer {method} in time; retry shortly"
        )
    return min(timeout_s, left_s)


async def until_answered(sent_call: Awaitable[T], timeout_s: float | None) -> T:
    """The actor's answer to a call already sent. Should the caller go away meanwhile (the
    HTTP client disconnected, so Serve cancelled the request), the call is cancelled in the
    actor too: a read not yet run is not run for nobody (a write already queued commits; its
    caller, gone, could not have learnt the outcome anyway)."""
    try:
        return await asyncio.wait_for(sent_call, timeout_s)
    except asyncio.CancelledError:
        if isinstance(sent_call, ray.ObjectRef):
            with contextlib.suppress(Exception):  # finished meanwhile, or the actor gone
                ray.cancel(sent_call)
        raise


async def ask(directory: Handle, method: DirectoryMethod, *args: Any) -> Any:
    """Call the directory actor; its named errors come back as themselves, and no answer
    within DIRECTORY_ANSWER_TIMEOUT_S is `WorkspaceUnavailable`. The call itself is never cut
    short (the directory changes its state in steps): it goes on, and a repeat joins it
    (activations) or asks again (look-ups)."""
    sent = asyncio.ensure_future(getattr(directory, method).remote(*args))
    sent.add_done_callback(_consume_outcome)
    timeout_s = DIRECTORY_ANSWER_TIMEOUT_S
    try:
        return await asyncio.wait_for(asyncio.shield(sent), timeout_s)
    except TimeoutError:
        raise WorkspaceUnavailable(
            f"the directory did not answer {method} within {timeout_s:g} s"
        ) from None
    except RayTaskError as exc:
        raise unwrap(exc) from None
    except (RayActorError, TaskCancelledError) as exc:
        # a cancelled call (Ray cancels the task when the future awaiting it is cancelled, as
        # under a loaded node) is the directory not answering, not a defect: retry shortly
        raise WorkspaceUnavailable(f"directory unavailable: {exc.__class__.__name__}") from None


def _consume_outcome(sent: asyncio.Future[Any]) -> None:
    """An ask its caller stopped waiting for still ends somewhere: its error is not news."""
    if not sent.cancelled():
        sent.exception()


class WorkspaceReach:
    """Actor handles of workspaces, cached per process, and the one resend loop.

    `wake_gate(workspace_id)`, when given, is asked before the directory is asked for an actor
    this process holds no handle for (a wake, unless another process woke it): it raises
    `Overloaded` to refuse the call, which then never ran."""

    def __init__(self, directory: Handle, wake_gate: Callable[[str], None] | None = None):
        self.directory = directory
        self.wake_gate = wake_gate
        self._handles: dict[str, Handle] = {}

    def holds(self, workspace_id: str) -> bool:
        return workspace_id in self._handles

    async def handle(
        self, workspace_id: str, saw_failure: bool = False, gated: bool = True
    ) -> Handle:
        """The workspace's actor: cached, or from the directory (told when this process saw
        the cached one fail, so it lets go of a dead actor). `gated`: the call has not run
        anywhere yet, so the wake gate may refuse it."""
        handle = None if saw_failure else self._handles.get(workspace_id)
        if handle is None:
            if gated and self.wake_gate is not None:
                self.wake_gate(workspace_id)
            handle = await ask(self.directory, DirectoryMethod.ACTIVATE, workspace_id, saw_failure)
            self._handles[workspace_id] = handle
        return handle

    def forget(self, workspace_id: str) -> None:
        self._handles.pop(workspace_id, None)

    async def _ended_cleanly(self, workspace_id: str, handle: Handle) -> bool:
        try:
            return bool(
                await ask(
                    self.directory,
                    DirectoryMethod.ENDED_CLEANLY,
                    workspace_id,
                    handle._actor_id.hex(),
                )
            )  # the only stable id
        except MiniSphereError:
            return False

    async def call(
        self,
        workspace_id: str,
        method: ServedMethod,
        *args: Any,
        idempotent_attempts: int = 0,
        max_attempts: int | None = None,
        timeout_s: float | None = None,
        deadline_s: float = FOLLOW_HIBERNATION_S,
        unknown_outcome: str = "",
    ) -> tuple[Reply[Any], int, float]:
        """Send `method(*args)` to the workspace's actor until it answers (see the module
        docstring). Returns (the done reply, attempts, ms of the last round trip); a refusal
        raises its named error. With `timeout_s`, the whole call, every attempt included,
        also ends by `deadline_s`."""
        deadline = time.monotonic() + deadline_s
        attempt = 0
        began = time.perf_counter()
        while True:
            attempt += 1
            last = max_attempts is not None and attempt >= max_attempts
            handle = await self.handle(workspace_id)
            wait_s = _bounded(timeout_s, deadline, workspace_id, method, unknown_outcome)
            sent = time.perf_counter()
            try:
                # through the actor's gate: a process outlives a workspace's residency
                sent_call = handle.serve.remote(workspace_id, ServedMethod(method).value, *args)
                reply = await until_answered(sent_call, wait_s)
            except (TimeoutError, TaskCancelledError):
                # cancelled: as a timeout, the call may or may not have run
                self._no_answer(
                    workspace_id,
                    method,
                    timeout_s,
                    attempt,
                    not last and attempt <= idempotent_attempts,
                    unknown_outcome,
                )
                continue
            except RayActorError as exc:
                await self._actor_failed(
                    workspace_id,
                    method,
                    handle,
                    exc,
                    attempt,
                    not last and attempt <= idempotent_attempts,
                    None if last else deadline,
                    unknown_outcome,
                )
                continue
            rpc_ms = (time.perf_counter() - sent) * 1e3
            activate_ms = (sent - began) * 1e3
            if reply.ok:
                if activate_ms >= ACTIVATE_SHOWN_MS:
                    reply = reply.with_timings({**reply.timings, "activate_ms": activate_ms})
                return reply, attempt, rpc_ms
            await self._refused(
                workspace_id, method, reply.error, attempt, None if last else deadline
            )

    @staticmethod
    def _no_answer(
        workspace_id: str,
        method: ServedMethod,
        timeout_s: float | None,
        attempt: int,
        resend: bool,
        unknown_outcome: str,
    ) -> None:
        """A call that did not answer in time: returns when it is to be sent again (`resend`:
        a resend cannot apply it twice), else raises."""
        log.warning(
            "workspace %s: %s did not answer in %s s (attempt %d)",
            workspace_id,
            method,
            timeout_s,
            attempt,
        )
        if not resend:
            raise WorkspaceUnavailable(
                unknown_outcome
                or (
                    f"workspace {workspace_id} did not answer {method} in time; it may still "
                    "apply it"
                )
            ) from None

    async def _actor_failed(
        self,
        workspace_id: str,
        method: ServedMethod,
        handle: Handle,
        exc: RayActorError,
        attempt: int,
        resend: bool,
        deadline: float | None,
        unknown_outcome: str,
    ) -> None:
        """The actor died during the call: returns when it is to be sent again (`resend`, or
        the actor ended cleanly, before it ran the call, and `deadline` has not passed; None:
        never), else raises."""
        self.forget(workspace_id)
        log.warning(
            "workspace %s actor failed during %s (attempt %d): %s",
            workspace_id,
            method,
            attempt,
            exc.__class__.__name__,
        )
        # not gated: whether the call ran is still to be found out
        await self.handle(workspace_id, saw_failure=True, gated=False)
        if resend or (
            deadline is not None
            and time.monotonic() < deadline
            and await self._ended_cleanly(workspace_id, handle)
        ):
            return
        raise WorkspaceUnavailable(
            unknown_outcome or (f"workspace {workspace_id} failed during {method}; retry shortly")
        ) from None

    async def _refused(
        self,
        workspace_id: str,
        method: ServedMethod,
        error: BaseException | None,
        attempt: int,
        deadline: float | None,
    ) -> None:
        """The actor refused the call: returns when it is to be sent again (the workspace was
        hibernating, before `deadline`; None: never), else raises the refusal."""
        if (
            isinstance(error, WorkspaceHibernating)
            and deadline is not None
            and time.monotonic() < deadline
        ):
            self.forget(workspace_id)
            await asyncio.sleep(min(RESEND_PAUSE_S * attempt, RESEND_PAUSE_MAX_S))
            await self.handle(workspace_id, saw_failure=True)
            return
        if isinstance(error, MiniSphereError):
            raise error
        # not a named error (a bug somewhere): its text may name nodes or addresses
        raise WorkspaceUnavailable(
            str(error),
            public_message=(f"workspace {workspace_id} failed during {method}; retry shortly"),
        )
