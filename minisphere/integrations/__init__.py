"""Adapters that put a Mini-Sphere workspace where an agent framework expects its memory.

One module per framework, each importing its framework only when it is itself imported, so
`minisphere.integrations` costs nothing to an agent that uses none of them:

- `langchain`  a `BaseRetriever` over recall and structured tools for the contract methods
               (`pip install 'minisphere[langchain]'`);
- `langgraph`  a LangGraph `BaseStore` (`minisphere[langgraph]`);
- `llamaindex` a LlamaIndex memory block for `Memory` (`minisphere[llamaindex]`);
- `tool_specs` the contract methods as tool definitions for any LLM API (no extra needed);
- `anthropic_memory` a backend for Anthropic's memory tool: its file commands on a workspace,
               one entry per file (`memory_files`; no extra needed).

Every adapter takes a workspace *handle*: the HTTP client's `Client.workspace(...)` or
`AsyncClient.workspace(...)`, the in-cluster client (`actors/in_cluster.py`), or any object with
the same method names. `handles` is the one place that tells a sync handle from an async one.
No adapter builds a client: every call goes through the handle, so it inherits the handle's
overload retry (a 503 with Retry-After sent again a bounded number of times, with jitter; set
with the client's `overload_retries=`, 0 turns it off) and raises its `ServiceError` after the
last one.
"""
