"""LangChain adapter (`pip install 'minisphere[langchain]'`): a retriever over recall and
structured tools for the contract methods.

    from minisphere.integrations.langchain import MinisphereRetriever, minisphere_tools
    retriever = MinisphereRetriever(workspace=ws, top_k=5, tag="design")
    retriever.invoke("why sqlite?")                 # [Document(page_content=..., metadata=...)]
    tools = minisphere_tools(ws)                    # bind to a chat model: model.bind_tools(tools)

`ws` is any workspace handle (see `handles`): sync handles serve `invoke` and `ainvoke`, async
ones `ainvoke`. A tool's `args_schema` is the engine's own argument model, so a model's call is
validated exactly as the RPC is (LangChain shows a model the Python names, `top_k`; the
model accepts those and the wire's `topK` alike). A tool answers the service's JSON; a refused
call raises `ToolServiceError`, both the client's `ServiceError` and LangChain's
`ToolException`, so a tool made with `handle_tool_error=True` hands the refusal back to the
model as an error ToolMessage instead of raising. Calls go through the handle, so they inherit
its overload retry (`overload_retries=` of the client that made it): only the refusal after the
last resend reaches LangChain, with `retry_after_s` kept.
"""

from __future__ import annotations

from typing import Any, Optional

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import StructuredTool, ToolException
from pydantic import ConfigDict, Field

from minisphere.client import ServiceError
from minisphere.engine import constants as C
from minisphere.engine.arguments import RecallArgs
from minisphere.integrations.handles import acall, as_wire, call
from minisphere.integrations.tool_specs import TOOL_ARGUMENTS, tool_description
from minisphere.wire import Kind

# the default tools: the everyday surface of an agent's memory (the statistics and graph views
# are left to `minisphere_tools(ws, names=[...])`, which accepts every name in TOOL_ARGUMENTS)
DEFAULT_TOOLS = (
    "capture",
    "append",
    "update",
    "setStatus",
    "forget",
    "link",
    "unlink",
    "recall",
    "getEntry",
    "listRecent",
    "connections",
    "getBrief",
)
RECALL_OPTIONS = ("top_k", "tag", "kind", "hops", "full")
# an entry's wire fields carried into Document.metadata, under snake_case names
METADATA_FIELDS = {
    "id": "id",
    "tags": "tags",
    "kind": "kind",
    "claimTag": "claim_tag",
    "evidenceRef": "evidence_ref",
    "status": "status",
    "volatility": "volatility",
    "source": "source",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
    "importance": "importance",
    "stale": "stale",
    "truncated": "truncated",
    "score": "score",
    "breakdown": "breakdown",
}


class MinisphereRetriever(BaseRetriever):
    """Documents for a query, ranked by the workspace's recall (contract section 5). Each
    Document's `id` is the entry id; `metadata` holds the entry's tags, kind, claim tag,
    evidence, status, volatility, score and the full score breakdown. The options are fields
    and may also be given per call: `retriever.invoke(query, top_k=3, tag="db")`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    workspace: Any = Field(description="a workspace handle of the HTTP or in-cluster client")
    top_k: int = Field(default=C.RECALL_DEFAULT_TOP_K, ge=1, le=C.RECALL_MAX_TOP_K)
    tag: Optional[str] = None
    kind: Optional[Kind] = None
    hops: int = Field(default=C.RECALL_DEFAULT_HOPS, ge=0, le=C.GRAPH_MAX_HOPS)
    full: bool = False

    def _request(self, query: str, overrides: dict[str, Any]) -> RecallArgs:
        unknown = sorted(set(overrides) - set(RECALL_OPTIONS))
        if unknown:
            raise ValueError(f"unknown recall option(s) {unknown}; known: {RECALL_OPTIONS}")
        options = {name: getattr(self, name) for name in RECALL_OPTIONS} | overrides
        return RecallArgs(query=query, **options)  # refused here as the service would

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        request = self._request(query, overrides)
        return documents(call(self.workspace, "recall", query, **_options(request)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        request = self._request(query, overrides)
        return documents(await acall(self.workspace, "recall", query, **_options(request)))


def _options(request: RecallArgs) -> dict[str, Any]:
    return request.model_dump(exclude={"query"}, exclude_none=True)


def documents(answer: Any) -> list[Document]:
    """A recall answer (the client's model or the wire dict) as Documents."""
    items = as_wire(answer)["items"]
    return [
        Document(
            id=item["id"],
            page_content=item["content"],
            metadata={ours: item[wire] for wire, ours in METADATA_FIELDS.items() if wire in item},
        )
        for item in items
    ]


class ToolServiceError(ServiceError, ToolException):
    """A refused tool call: caught as the client's ServiceError, handled as a ToolException."""


def minisphere_tool(
    workspace: Any, name: str, *, description: str | None = None, **tool_options: Any
) -> StructuredTool:
    """One contract method as a structured tool. `tool_options` go to StructuredTool (e.g.
    `handle_tool_error=True` to hand a refusal back to the model instead of raising)."""
    if name not in TOOL_ARGUMENTS:
        raise ValueError(f"no tool {name!r}; the tools are {', '.join(TOOL_ARGUMENTS)}")

    def run(**arguments: Any) -> Any:
        try:
            return as_wire(call(workspace, "call", name, **arguments))
        except ServiceError as exc:
            raise ToolServiceError(exc.status, exc.code, exc.message, exc.retry_after_s) from exc

    async def arun(**arguments: Any) -> Any:
        try:
            return as_wire(await acall(workspace, "call", name, **arguments))
        except ServiceError as exc:
            raise ToolServiceError(exc.status, exc.code, exc.message, exc.retry_after_s) from exc

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        args_schema=TOOL_ARGUMENTS[name],
        description=description or tool_description(name),
        infer_schema=False,
        **tool_options,
    )


def minisphere_tools(
    workspace: Any, names: tuple[str, ...] | list[str] = DEFAULT_TOOLS, **tool_options: Any
) -> list[StructuredTool]:
    """The contract methods as tools over one workspace (default: `DEFAULT_TOOLS`)."""
    return [minisphere_tool(workspace, name, **tool_options) for name in names]
