"""The floor of a call through Serve (bench_call_cost): the least an ingress replica and an
actor behind it can do. A FastAPI ingress deployed like the service's (a quarter of a CPU, the
same bounds on requests in flight) reads the JSON body and awaits one call of an async Ray
actor that answers a constant; no token, no workspace, no engine.

Deployed beside the service, in the same cluster and behind the same front:
`serve.run(bare_app(), name=BARE_APP, route_prefix=BARE_PREFIX)`, then
`POST {BARE_PREFIX}/<method>` with any JSON object.

No `from __future__ import annotations` here: Serve's class ingress hands FastAPI the route's
annotations as they stand, and a `Request` left as a string would be read as a query field."""

import ray
from fastapi import FastAPI, Request
from ray import serve

from serve_app import MAX_ONGOING_REQUESTS, MAX_QUEUED_REQUESTS

BARE_APP = "bare"
BARE_PREFIX = "/bare"
api = FastAPI()


@ray.remote(num_cpus=0)
class BareActor:
    """Stands where a workspace actor stands: one awaited call, a constant answer."""

    async def answer(self, body: dict) -> dict:
        return {"count": 0}

    async def ready(self) -> bool:
        return True


@serve.deployment(
    name="BareIngress",
    max_ongoing_requests=MAX_ONGOING_REQUESTS,
    max_queued_requests=MAX_QUEUED_REQUESTS,
    ray_actor_options={"num_cpus": 0.25},
)
@serve.ingress(api)
class BareIngress:
    def __init__(self):
        self.actor = BareActor.remote()

    @api.post("/{method}")
    async def call(self, method: str, request: Request) -> dict:
        return await self.actor.answer.remote(await request.json())


def bare_app():
    return BareIngress.bind()


def deploy_bare() -> None:
    """The bare pair as a second Serve application of the running Serve instance."""
    serve.run(bare_app(), name=BARE_APP, route_prefix=BARE_PREFIX)
